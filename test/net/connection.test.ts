import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { FrameConnection } from '../../src/net/index.js';
import { encodeFrame, makeMessage, type Message } from '../../src/protocol/index.js';
import { socketPair } from './pair.js';

const unhandled: unknown[] = [];
const onUnhandled = (e: unknown): void => void unhandled.push(e);
before(() => process.on('unhandledRejection', onUnhandled));
after(() => {
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no unhandled rejections');
});

async function connection(options: Partial<ConstructorParameters<typeof FrameConnection>[1]> = {}) {
  const p = await socketPair();
  const metrics = new ClinkMetrics();
  const { log, lines } = memoryLogger();
  const conn = new FrameConnection(p.server, { role: 'coordinator', metrics, log, ...options });
  return { p, conn, metrics, lines };
}

describe('frame connection', () => {
  test('a frame of an unknown kind costs the peer its connection: logged once, counted, no rejection escapes', async () => {
    const { p, conn, metrics, lines } = await connection();
    const got: Message[] = [];
    conn.start({ onMessage: (m) => void got.push(m) });
    p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 1 })));
    p.client.write(Buffer.from([0, 0, 0, 3, 250, 1, 2]));
    p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 2 })));
    const closed = await conn.closed;
    assert.equal(closed.reason, 'malformed');
    assert.match(closed.error!.message, /unknown message kind 250/);
    assert.deepEqual(
      got.map((m) => m.type),
      ['Heartbeat'],
      'frames after the bad one are not handled',
    );
    assert.equal(await metrics.value('clink_malformed_frames_total', { role: 'coordinator' }), 1);
    assert.equal(lines().filter((l) => /malformed frame from 127\.0\.0\.1:\d+/.test(String(l.msg))).length, 1);
    await new Promise((r) => p.client.once('close', r));
    await p.close();
  });

  test('an oversize header costs the peer its connection and is counted', async () => {
    const { p, conn, metrics } = await connection();
    conn.start({ onMessage: () => undefined });
    p.client.write(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    const closed = await conn.closed;
    assert.equal(closed.reason, 'malformed');
    assert.equal(closed.error!.name, 'FrameTooLargeError');
    assert.equal(await metrics.value('clink_malformed_frames_total'), 1);
    await p.close();
  });

  test('a handler that throws drops only that peer; another connection carries on', async () => {
    const a = await connection();
    const b = await connection();
    const seen: number[] = [];
    a.conn.start({
      onMessage: () => {
        throw new Error('handler bug');
      },
    });
    b.conn.start({ onMessage: (m) => void seen.push((m as { seq: number }).seq) });
    a.p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 1 })));
    const closed = await a.conn.closed;
    assert.equal(closed.reason, 'malformed');
    assert.match(closed.error!.message, /handler bug/);
    b.p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 7 })));
    await sleep(50);
    assert.deepEqual(seen, [7]);
    b.conn.close();
    await a.p.close();
    await b.p.close();
  });

  test('frames are handled one at a time in order, and a slow handler never holds the reader', async () => {
    const { p, conn } = await connection();
    const order: string[] = [];
    conn.start({
      onRead: (m) => {
        if (m.type !== 'Heartbeat') return false;
        order.push(`read hb${m.seq}`);
        return true;
      },
      onMessage: async (m) => {
        order.push(`start ${m.type}`);
        if (m.type === 'StartJob') await sleep(150);
        order.push(`end ${m.type}`);
      },
    });
    p.client.write(encodeFrame(makeMessage('StartJob', { jobId: 'j' })));
    p.client.write(encodeFrame(makeMessage('CommitCheckpoint', { jobId: 'j', checkpointId: 1 })));
    await sleep(30);
    p.client.write(encodeFrame(makeMessage('Heartbeat', { seq: 1 })));
    await sleep(200);
    assert.deepEqual(order, [
      'start StartJob',
      'read hb1',
      'end StartJob',
      'start CommitCheckpoint',
      'end CommitCheckpoint',
    ]);
    conn.close();
    await p.close();
  });

  test('a dispatch backlog past its bound drops the peer', async () => {
    const { p, conn, metrics } = await connection({ maxDispatchBacklogFrames: 3 });
    conn.start({ onMessage: () => new Promise<void>(() => undefined) }); // a handler that never returns
    for (let seq = 1; seq <= 6; seq++) p.client.write(encodeFrame(makeMessage('Heartbeat', { seq })));
    const closed = await conn.closed;
    assert.equal(closed.reason, 'backlog');
    assert.match(closed.error!.message, /dispatch backlog over its bound \(3 frames/);
    assert.equal(await metrics.value('clink_malformed_frames_total'), 1);
    await p.close();
  });
});
