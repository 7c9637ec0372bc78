// What a hot rescale changes inside running subtasks, in-process: the gate a subtask waits at, an aligner
// that gains channels, and a writer whose edge is pointed at a new set of subtasks (partitioned over
// their number).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyGroupOf, normalizeKey, operatorIndexForKeyGroup, type OperatorSpec } from '../../src/plan/index.js';
import { BATCH, BarrierAligner, CutoverGate, InputQueue, type StreamElement } from '../../src/runtime/index.js';
import { RecordWriter } from '../../src/runtime/writer.js';

test('an aligner given new channels waits for their barriers too, and not for channels that ended', () => {
  const a = new BarrierAligner(2);
  assert.equal(a.onBarrier(0, 1).kind, 'none');
  assert.equal(a.onBarrier(1, 1).kind, 'complete');
  // The cutover: channels 0 and 1 (the old subtasks) will end; 2, 3 and 4 are the new ones.
  a.addChannels(3);
  assert.equal(a.onEnd(0).kind, 'none');
  assert.equal(a.onEnd(1).kind, 'none');
  assert.equal(a.onBarrier(2, 2).kind, 'none');
  assert.equal(a.onBarrier(3, 2).kind, 'none');
  assert.equal(a.onBarrier(4, 2).kind, 'complete');
});

test('a retargeted edge partitions over the new subtasks, and hands back the old ones to close', () => {
  const target = { id: 'w', name: 'w', type: 'window', keyed: true } as unknown as OperatorSpec;
  const queues = (n: number) => Array.from({ length: n }, () => new InputQueue(100));
  const old = queues(2);
  const writer = new RecordWriter(
    [
      {
        kind: 'HASH',
        targets: old.map((q) => ({ queue: q, channel: 0 })),
        keySelector: (v) => v,
        target,
        maxParallelism: 128,
        edgeIndex: 0,
      },
    ],
    1000,
    0,
    1,
  );
  const fresh = queues(3);
  const returned = writer.retarget(
    0,
    fresh.map((q) => ({ queue: q, channel: 5 })),
  );
  assert.deepEqual(
    returned.map((t) => t.queue),
    old,
  );
  for (let k = 0; k < 300; k++) writer.collect(k, 0);
  writer.end();
  const got = fresh.map((q) => {
    const values: unknown[] = [];
    for (let e: StreamElement | undefined; (e = q.poll());) if (e.kind === BATCH) values.push(...e.values);
    return values;
  });
  for (let i = 0; i < 3; i++)
    for (const k of got[i]!)
      assert.equal(
        operatorIndexForKeyGroup(keyGroupOf(normalizeKey(k), 128), 3, 128),
        i,
        `key ${String(k)} at subtask ${i}`,
      );
  assert.equal(got.flat().length, 300);
  assert.equal(
    old.every((q) => q.poll() === undefined),
    true,
    'nothing more for the old ones',
  );
  assert.throws(() => writer.retarget(9, []), /no output edge 9/);
});

test('a cutover gate holds only at its checkpoint, says go on or retire, and an early go-on disarms it', async () => {
  const g = new CutoverGate();
  assert.equal(g.passed(7), undefined, 'not armed: no wait');
  g.arm(7);
  assert.equal(g.passed(6), undefined, 'another checkpoint passes');
  assert.equal(g.holding, false);
  const wait = g.passed(7)!;
  assert.equal(g.holding, true);
  g.release('retire');
  assert.equal(await wait, 'retire');
  assert.equal(g.holding, false);
  g.arm(9);
  const resumed = g.passed(9)!;
  g.release('resume');
  assert.equal(await resumed, 'resume');
  g.arm(11);
  g.release('resume');
  assert.equal(g.passed(11), undefined, 'given up before the barrier: it never stops');
});
