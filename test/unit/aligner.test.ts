// The barrier aligner on an injected clock: ids decide, a newer barrier cancels an older alignment, an
// abort resets one, and held elements come back in order.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BARRIER, BATCH, BarrierAligner, END, type AlignerEvent, type StreamElement } from '../../src/runtime/index.js';

const batch = (channel: number, v: number): StreamElement => ({ kind: BATCH, channel, values: [v], timestamps: [0] });
const barrier = (channel: number, checkpointId: number): StreamElement => ({ kind: BARRIER, channel, checkpointId });
const end = (channel: number): StreamElement => ({ kind: END, channel });

/** Drive the aligner as the task loop does; returns what was processed, in order, and the events. */
function run(channels: number, input: StreamElement[], aborts: Map<number, number> = new Map()) {
  let t = 0;
  const a = new BarrierAligner(channels, () => t);
  const queue = [...input];
  const log: string[] = [];
  let steps = 0;
  for (;;) {
    const abortAt = aborts.get(steps++);
    if (abortAt !== undefined) log.push(`abort ${abortAt}: ${a.abort(abortAt) ? 'reset' : 'nothing'}`);
    const e = a.nextReplayed() ?? queue.shift();
    if (!e) break;
    t += 10;
    if (a.hold(e)) continue;
    let ev: AlignerEvent = { kind: 'none' };
    if (e.kind === BATCH) log.push(`${e.channel}:${String(e.values[0])}`);
    else if (e.kind === END) ev = a.onEnd(e.channel);
    else if (e.kind === BARRIER) ev = a.onBarrier(e.channel, e.checkpointId);
    if (ev.kind === 'complete') log.push(`checkpoint ${ev.checkpointId} (${ev.alignmentMs} ms)`);
    if (ev.kind === 'cancelled') log.push(`cancelled ${ev.checkpointId} by ${ev.by}`);
    if (ev.kind === 'stale') log.push(`dropped stale ${ev.checkpointId}`);
  }
  return { log, aligner: a };
}

describe('barrier alignment', () => {
  test('a channel that delivered the barrier is held until the other does; then the checkpoint, then what was held, in order', () => {
    const { log, aligner } = run(2, [
      batch(0, 1),
      barrier(0, 1),
      batch(0, 2),
      batch(0, 3),
      batch(1, 10),
      barrier(1, 1),
      batch(1, 11),
    ]);
    assert.deepEqual(log, ['0:1', '1:10', 'checkpoint 1 (40 ms)', '0:2', '0:3', '1:11']);
    assert.equal(aligner.heldCount, 0);
  });

  test('a declined checkpoint: barrier 2 on a channel that never got barrier 1 cancels alignment 1 (not completes it), and 2 then aligns', () => {
    // Channel 1's source declined checkpoint 1: its first barrier is 2.
    const { log, aligner } = run(2, [
      barrier(0, 1),
      batch(0, 1),
      barrier(0, 2),
      batch(0, 2),
      batch(1, 10),
      barrier(1, 2),
      batch(1, 11),
    ]);
    assert.deepEqual(log, ['1:10', 'cancelled 1 by 2', '0:1', 'checkpoint 2 (20 ms)', '0:2', '1:11']);
    assert.equal(aligner.cancelled, 1);
    assert.equal(aligner.heldCount, 0, 'nothing left held: the next alignment is not stalled');
  });

  test("an abort resets the alignment and releases what it held; that checkpoint's late barriers are dropped", () => {
    const { log } = run(2, [barrier(0, 1), batch(0, 1), batch(0, 2), barrier(1, 1), batch(1, 10)], new Map([[3, 1]]));
    assert.deepEqual(log, ['abort 1: reset', '0:1', '0:2', 'dropped stale 1', '1:10']);
  });

  test('a barrier older than the alignment in progress is dropped; an abort of an older checkpoint leaves a newer alignment alone', () => {
    const { log } = run(2, [barrier(0, 5), barrier(1, 4), batch(1, 1), barrier(1, 5)], new Map([[2, 4]]));
    assert.deepEqual(log, ['dropped stale 4', 'abort 4: nothing', '1:1', 'checkpoint 5 (30 ms)']);
  });

  test('a channel that ends completes an alignment that waited only for it', () => {
    const { log } = run(3, [barrier(0, 1), barrier(1, 1), batch(0, 1), end(2)]);
    assert.deepEqual(log, ['checkpoint 1 (30 ms)', '0:1']);
  });
});

describe('a held local channel is bounded', () => {
  test("a channel with a queue's worth of held batches is full to its producer; the others are not; a release lets it go on", async () => {
    const { InputQueue } = await import('../../src/runtime/index.js');
    const q = new InputQueue(2);
    const held = q.channel(0);
    const other = q.channel(1);
    q.hold(0);
    assert.equal(held.isFull, false);
    q.hold(0);
    assert.equal(held.isFull, true, 'two held batches of channel 0: its producer waits');
    assert.equal(other.isFull, false, 'channel 1 still owes the barrier: it goes on');
    let woken = false;
    const waiting = held.waitNotFull().then(() => (woken = true));
    await Promise.resolve();
    assert.equal(woken, false);
    q.release(0);
    await waiting;
    assert.equal(held.isFull, false);
  });

  test('the aligner tells the queue what it holds and what it lets go', () => {
    const events: string[] = [];
    const a = new BarrierAligner(
      2,
      () => 0,
      (e, held) => events.push(`${held ? 'hold' : 'release'} ${e.channel}`),
    );
    a.onBarrier(0, 1);
    assert.equal(a.hold(batch(0, 1)), true);
    assert.equal(a.hold(batch(1, 2)), false);
    a.onBarrier(1, 1);
    assert.deepEqual(events, ['hold 0', 'release 0']);
  });
});
