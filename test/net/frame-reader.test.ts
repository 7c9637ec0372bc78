import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FrameReader, FrameTimeoutError } from '../../src/net/index.js';
import {
  decodeMessage,
  encodeFrame,
  FrameDecodeError,
  FrameTooLargeError,
  makeMessage,
  MAX_FIRST_FRAME_BYTES,
} from '../../src/protocol/index.js';
import { assertNoLeaks } from '../helpers.js';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { socketPair } from './pair.js';

const header = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

describe('frame reader on a real socket', () => {
  test('frames split at every byte, or glued together, come out whole and in order', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server);
    const frames = [1, 2, 3].map((seq) => encodeFrame(makeMessage('Heartbeat', { seq })));
    const all = Buffer.concat(frames);
    for (let i = 0; i < all.length; i += 3) p.client.write(all.subarray(i, i + 3));
    for (const seq of [1, 2, 3])
      assert.deepEqual(decodeMessage((await reader.next())!), makeMessage('Heartbeat', { seq }));
    p.client.end();
    assert.equal(await reader.next(), null, 'clean end between frames');
    await p.close();
  });

  test('a header claiming 4 GiB is refused on the header alone, allocating nothing', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server);
    const before = process.memoryUsage().arrayBuffers;
    p.client.write(header(0xffff_ffff));
    await assert.rejects(
      reader.next(),
      (e: unknown) => e instanceof FrameTooLargeError && e.claimedBytes === 0xffff_ffff,
    );
    assert.equal(reader.bufferedBytes, 0);
    assert.ok(process.memoryUsage().arrayBuffers - before < 16 * 1024 * 1024);
    await p.close();
  });

  test('memory follows the bytes that arrived, not the length the header claimed', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server);
    const pending = reader.next();
    pending.catch(() => undefined);
    p.client.write(header(200 * 1024 * 1024)); // claims 200 MiB, under the 256 MiB cap
    p.client.write(Buffer.alloc(512 * 1024, 7)); // sends 512 KiB, then stalls
    await sleep(100);
    assert.ok(reader.bufferedBytes <= 512 * 1024, `holding ${reader.bufferedBytes} bytes`);
    p.client.end();
    await assert.rejects(
      pending,
      (e: unknown) => e instanceof FrameDecodeError && /connection closed inside a frame/.test(e.message),
    );
    await p.close();
  });

  test('the first frame of a connection is capped at 64 KiB, later ones at the frame cap', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server, { firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES });
    p.client.write(header(MAX_FIRST_FRAME_BYTES + 1));
    await assert.rejects(
      reader.next(),
      (e: unknown) => e instanceof FrameTooLargeError && /above the 65536-byte cap/.test(e.message),
    );
    await p.close();

    const q = await socketPair();
    const r2 = new FrameReader(q.server, { firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES });
    q.client.write(encodeFrame(makeMessage('HelloClient', { clientName: 'c' })));
    assert.equal(decodeMessage((await r2.next())!).type, 'HelloClient');
    const big = encodeFrame(
      makeMessage('SubmitJob', {
        jobName: 'j',
        specJson: 'x'.repeat(100 * 1024),
        modules: [],
        checkpoint: NO_CHECKPOINTS,
      }),
    );
    q.client.write(big);
    assert.equal(decodeMessage((await r2.next())!).type, 'SubmitJob');
    await q.close();
  });

  test('a peer that sends one byte every 100 ms hits the frame deadline', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server, { readTimeoutMs: 1_000, frameDeadlineMs: 600 });
    const frame = encodeFrame(makeMessage('Heartbeat', { seq: 1 }));
    let i = 0;
    const trickle = setInterval(() => {
      if (i < frame.length && !p.client.destroyed) p.client.write(frame.subarray(i, ++i));
    }, 100);
    const t0 = Date.now();
    await assert.rejects(
      reader.next(),
      (e: unknown) => e instanceof FrameTimeoutError && /frame not complete within 600 ms/.test(e.message),
    );
    clearInterval(trickle);
    const took = Date.now() - t0;
    assert.ok(took >= 550 && took < 2_000, `deadline hit after ${took} ms`);
    assert.ok(i < frame.length, 'each byte arrived inside the per-read bound, yet the frame was refused');
    await p.close();
  });

  test('a silent peer hits the per-read timeout', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server, { readTimeoutMs: 150 });
    await assert.rejects(
      reader.next(),
      (e: unknown) => e instanceof FrameTimeoutError && /no bytes from the peer for 150 ms/.test(e.message),
    );
    await p.close();
  });

  test('a complete frame not yet taken pauses the socket (backpressure), and taking it resumes', async () => {
    const p = await socketPair();
    const reader = new FrameReader(p.server);
    p.client.write(Buffer.concat([1, 2].map((seq) => encodeFrame(makeMessage('Heartbeat', { seq })))));
    await sleep(50);
    assert.equal(p.server.isPaused(), true);
    await reader.next();
    await reader.next();
    await p.close();
  });

  test('readers and sockets leave nothing open', async () => {
    await assertNoLeaks(async () => {
      const p = await socketPair();
      const reader = new FrameReader(p.server, { readTimeoutMs: 5_000, frameDeadlineMs: 5_000 });
      p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 1 })));
      await reader.next();
      reader.close();
      await p.close();
    });
  });
});
