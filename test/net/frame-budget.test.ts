// What a node's readers hold of frames not yet complete, together: a budget shared by every reader,
// past which the peer whose frame would pass it is cut and what it held given back; a large body read
// into one buffer grown as bytes come, whatever way the socket splits them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FrameBudget, FrameMemoryError, FrameReader } from '../../src/net/index.js';
import { socketPair } from './pair.js';

const header = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** Wait until `check` holds, a turn of the loop at a time. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

describe('the frame budget', () => {
  test('a peer whose partial frame would pass the node budget is cut; the other goes on, and the budget is given back', async () => {
    const budget = new FrameBudget(2 * 1024 * 1024);
    const a = await socketPair();
    const b = await socketPair();
    const ra = new FrameReader(a.server, { budget });
    const rb = new FrameReader(b.server, { budget });
    const nextA = ra.next();
    const nextB = rb.next();
    nextB.catch(() => undefined);
    a.client.write(Buffer.concat([header(2 * 600 * 1024), Buffer.alloc(600 * 1024, 1)]));
    await until(() => ra.bufferedBytes === 600 * 1024);
    assert.equal(budget.usedBytes, 600 * 1024);
    b.client.write(Buffer.concat([header(2 * 1024 * 1024), Buffer.alloc(1536 * 1024, 2)]));
    await assert.rejects(
      nextB,
      (e: unknown) =>
        e instanceof FrameMemoryError && /over 2097152 \(--max-inflight-frame-bytes\); cutting it$/.test(e.message),
    );
    assert.equal(budget.usedBytes, 600 * 1024, 'what the cut peer held is given back');
    a.client.write(Buffer.alloc(600 * 1024, 1));
    const frame = (await nextA)!;
    assert.equal(frame.length, 2 * 600 * 1024);
    assert.ok(frame.every((x) => x === 1));
    assert.equal(budget.usedBytes, 0, 'a complete frame holds no budget');
    await a.close();
    await b.close();
  });

  test('frames of any size around the one-buffer threshold, split anywhere, come out whole and in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 2_600 * 1024 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 300 * 1024 }), { minLength: 1, maxLength: 12 }),
        async (sizes, cuts) => {
          const p = await socketPair();
          const budget = new FrameBudget(64 * 1024 * 1024);
          const reader = new FrameReader(p.server, { budget });
          const frames = sizes.map((n, i) => Buffer.alloc(n, i + 1));
          const bytes = Buffer.concat(frames.flatMap((f) => [header(f.length), f]));
          let at = 0;
          for (let i = 0; at < bytes.length; i++) {
            const n = cuts[i % cuts.length]!;
            p.client.write(bytes.subarray(at, at + n));
            at += n;
          }
          for (const f of frames) assert.ok(f.equals((await reader.next())!));
          assert.equal(budget.usedBytes, 0);
          await p.close();
        },
      ),
      { numRuns: 25 },
    );
  });
});
