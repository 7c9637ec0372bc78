import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { DEFAULT_OUTBOX_LIMITS, FrameReader, Outbox, type OutboxStop } from '../../src/net/index.js';
import { decodeMessage, encodeFrame, makeMessage } from '../../src/protocol/index.js';
import { socketPair } from './pair.js';

const frame = (seq: number): Buffer => encodeFrame(makeMessage('Heartbeat', { seq }));
const blob = (bytes: number): Buffer => Buffer.alloc(bytes, 1);

async function setup(limits: Partial<typeof DEFAULT_OUTBOX_LIMITS> = {}) {
  const p = await socketPair();
  const metrics = new ClinkMetrics();
  const { log, lines } = memoryLogger();
  const stops: OutboxStop[] = [];
  const outbox = new Outbox(p.server, { limits, metrics, log, peer: 'worker-1', onStop: (s) => stops.push(s) });
  return { p, outbox, metrics, lines, stops };
}

const discarded = (m: ClinkMetrics, cls: string, reason: string): Promise<number> =>
  m.value('clink_coordinator_outbound_frames_discarded_total', { class: cls, reason });

describe('outbox', () => {
  test('the defaults are the reference’s: 10,000 control frames, 64 MiB of them, 1 GiB of bulk', () => {
    assert.deepEqual(DEFAULT_OUTBOX_LIMITS, {
      maxControlFrames: 10_000,
      maxControlBytes: 64 * 1024 * 1024,
      maxBulkBytes: 1024 * 1024 * 1024,
    });
  });

  test('frames reach the peer in the order posted', async () => {
    const { p, outbox } = await setup();
    for (let seq = 1; seq <= 50; seq++) assert.equal(outbox.post(frame(seq)), 'queued');
    const reader = new FrameReader(p.client);
    for (let seq = 1; seq <= 50; seq++)
      assert.equal((decodeMessage((await reader.next())!) as { seq: number }).seq, seq);
    outbox.abort();
    await p.close();
  });

  test('a post past the control frame count stops the outbox (overflow) naming the bound, and counts what it discarded', async () => {
    const { p, outbox, metrics, stops, lines } = await setup({ maxControlFrames: 3 });
    // Posts return at once; the writer first runs after this synchronous burst.
    assert.deepEqual(
      [1, 2, 3, 4].map((s) => outbox.post(frame(s))),
      ['queued', 'queued', 'queued', 'refused'],
    );
    assert.equal(outbox.state, 'stopped');
    assert.deepEqual(stops, [
      {
        reason: 'overflow',
        detail: 'control queue at its bound of 3 frames (max_outbound_control_frames)',
        byItself: true,
      },
    ]);
    assert.equal(await discarded(metrics, 'control', 'overflow'), 3);
    assert.equal(outbox.post(frame(5)), 'refused', 'a stopped outbox refuses everything');
    assert.ok(
      lines().some(
        (l) =>
          l.msg ===
          'outbound queue stopped (overflow): control queue at its bound of 3 frames (max_outbound_control_frames)',
      ),
    );
    await new Promise((r) => p.client.once('close', r));
    await p.close();
  });

  test('a post past the control byte bound stops the outbox', async () => {
    const { p, outbox, stops } = await setup({ maxControlBytes: 100 });
    assert.equal(outbox.post(blob(40)), 'queued');
    assert.equal(outbox.post(blob(40)), 'queued');
    assert.equal(outbox.post(blob(40)), 'refused');
    assert.match(stops[0]!.detail, /bound of 100 bytes \(max_outbound_control_bytes\)/);
    await p.close();
  });

  test('bulk frames are bounded apart from control frames', async () => {
    const { p, outbox, metrics, stops } = await setup({ maxControlFrames: 2, maxBulkBytes: 1_000 });
    assert.equal(outbox.post(frame(1)), 'queued');
    assert.equal(outbox.post(frame(2)), 'queued');
    for (let i = 0; i < 4; i++)
      assert.equal(outbox.post(blob(200), 'bulk'), 'queued', 'bulk does not count against the control bound');
    assert.equal(outbox.state, 'open');
    assert.equal(outbox.post(blob(300), 'bulk'), 'refused');
    assert.match(stops[0]!.detail, /bulk queue at its bound of 1000 bytes \(max_outbound_bulk_bytes\)/);
    assert.equal(await discarded(metrics, 'bulk', 'overflow'), 4);
    assert.equal(await discarded(metrics, 'control', 'overflow'), 2);
    await p.close();
  });

  test('post never waits on a peer that does not read', async () => {
    const { p, outbox } = await setup();
    p.client.pause();
    const t0 = performance.now();
    for (let i = 0; i < 2_000; i++) assert.equal(outbox.post(blob(16 * 1024), 'bulk'), 'queued');
    assert.ok(performance.now() - t0 < 500, 'posting 32 MiB to a stalled peer returns at once');
    outbox.abort();
    await p.close();
  });

  test('a peer that stops reading shows as a stall: no progress while frames pend', async () => {
    const { p, outbox } = await setup();
    p.client.pause(); // the peer reads nothing
    for (let i = 0; i < 256; i++) outbox.post(blob(128 * 1024), 'bulk'); // 32 MiB, far past the socket buffers
    await sleep(300);
    const progressAt = outbox.lastProgressAt();
    await sleep(400);
    assert.equal(outbox.lastProgressAt(), progressAt, 'the socket took nothing more');
    assert.ok(outbox.stalledForMs() >= 380, `stalled for ${outbox.stalledForMs()} ms`);
    assert.ok(outbox.pendingSinceMs()! >= 650);
    // Once the peer reads again, progress resumes and the stall clears.
    p.client.resume();
    await sleep(300);
    assert.ok(outbox.lastProgressAt() > progressAt);
    assert.ok(outbox.stalledForMs() < 200);
    outbox.abort();
    await p.close();
  });

  test('a peer that reads a large transfer slowly but steadily is never stalled', async () => {
    const { p, outbox } = await setup();
    let reading = false;
    const pacer = setInterval(() => {
      reading = !reading;
      if (reading) p.client.resume();
      else p.client.pause();
    }, 40);
    for (let i = 0; i < 128; i++) outbox.post(blob(128 * 1024), 'bulk');
    let worst = 0;
    for (let t = 0; t < 12; t++) {
      await sleep(50);
      worst = Math.max(worst, outbox.stalledForMs());
    }
    clearInterval(pacer);
    assert.ok(worst < 250, `worst stall ${worst} ms while the peer kept reading`);
    outbox.abort();
    await p.close();
  });

  test('flush writes what is queued when the peer reads, discarding nothing', async () => {
    const { p, outbox, metrics } = await setup();
    const reader = new FrameReader(p.client);
    for (let seq = 1; seq <= 20; seq++) outbox.post(frame(seq));
    const got: number[] = [];
    const reading = (async () => {
      for (let f = await reader.next(); f; f = await reader.next()) got.push((decodeMessage(f) as { seq: number }).seq);
    })();
    await outbox.flush(2_000);
    await reading.catch(() => undefined);
    assert.equal(got.length, 20);
    assert.equal(await discarded(metrics, 'control', 'flush_deadline'), 0);
    assert.equal(outbox.post(frame(99)), 'refused');
    await p.close();
  });

  test('flush against a peer that does not read ends at its deadline, discarding and counting what is left', async () => {
    const { p, outbox, metrics, stops } = await setup();
    p.client.pause();
    for (let i = 0; i < 64; i++) outbox.post(blob(512 * 1024), 'bulk');
    for (let seq = 0; seq < 10; seq++) outbox.post(frame(seq));
    const t0 = Date.now();
    await outbox.flush(250);
    const took = Date.now() - t0;
    assert.ok(took >= 240 && took < 1_500, `flush took ${took} ms`);
    assert.equal(stops[0]!.reason, 'flush_deadline');
    assert.equal(stops[0]!.byItself, false, 'a flush is never a watchdog verdict');
    assert.ok((await discarded(metrics, 'bulk', 'flush_deadline')) > 0);
    assert.equal(await discarded(metrics, 'control', 'flush_deadline'), 10);
    assert.equal(p.server.destroyed, true);
    await p.close();
  });

  test('abort discards and counts with reason aborted, and the peer sees the end of the stream', async () => {
    const { p, outbox, metrics } = await setup();
    p.client.pause();
    for (let i = 0; i < 64; i++) outbox.post(blob(512 * 1024), 'bulk');
    await sleep(50);
    outbox.abort('worker lost: w1 (heartbeat timeout)');
    assert.ok((await discarded(metrics, 'bulk', 'aborted')) > 0);
    p.client.resume();
    await new Promise((r) => p.client.once('close', r));
    await outbox.writerDone;
    await p.close();
  });

  test('a transport that closes under the outbox stops it with write_failed', async () => {
    const { p, outbox, stops } = await setup();
    p.client.pause();
    for (let i = 0; i < 64; i++) outbox.post(blob(512 * 1024), 'bulk');
    await sleep(50);
    p.client.destroy();
    await outbox.writerDone;
    assert.equal(stops[0]!.reason, 'write_failed');
    assert.equal(stops[0]!.byItself, false);
    await p.close();
  });

  test('an encoding that cannot allocate stops the outbox with reason allocation', async () => {
    const { p, outbox, stops } = await setup();
    const r = outbox.postEncoded(() => {
      throw new RangeError('Array buffer allocation failed');
    });
    assert.equal(r, 'refused');
    assert.deepEqual(stops[0], {
      reason: 'allocation',
      detail: 'could not allocate a frame: Array buffer allocation failed',
      byItself: true,
    });
    await p.close();
  });
});
