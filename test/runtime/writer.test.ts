// When a RecordWriter's batches leave: full ones at once; partly filled ones when the task is about to
// wait or yield (flushPartial), not after every input batch (batchEnded), unless a linger bound says so.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OperatorSpec } from '../../src/plan/index.js';
import { BATCH, InputQueue, WATERMARK, type StreamElement } from '../../src/runtime/index.js';
import { RecordWriter } from '../../src/runtime/writer.js';

const target = { id: 'w', name: 'w', type: 'map', keyed: false } as unknown as OperatorSpec;

/** A writer over a REBALANCE edge to two in-process queues, and what each queue has received. */
function rebalanced(batchSize: number, lingerMs = 0, schedule?: (at: number, cb: () => void) => void) {
  const queues = [new InputQueue(1_000), new InputQueue(1_000)];
  const writer = new RecordWriter(
    [{ kind: 'REBALANCE', targets: queues.map((q) => ({ queue: q, channel: 0 })), target, maxParallelism: 128 }],
    batchSize,
    0,
    1,
    lingerMs,
    schedule,
  );
  const received = (): StreamElement[][] =>
    queues.map((q) => {
      const out: StreamElement[] = [];
      for (let e: StreamElement | undefined; (e = q.poll());) out.push(e);
      return out;
    });
  const sizes = (els: StreamElement[]): number[] => els.map((e) => (e.kind === BATCH ? e.values.length : -1));
  return { writer, received, sizes };
}

describe('record writer', () => {
  test('without a linger, a partly filled batch fills across input batches and leaves when the task waits or yields', () => {
    const { writer, received, sizes } = rebalanced(10);
    // Three input batches of 6 records each: 9 per target, a partial batch each.
    for (let b = 0; b < 3; b++) {
      for (let i = 0; i < 6; i++) writer.collect(b * 6 + i, 0);
      writer.batchEnded();
    }
    assert.deepEqual(received().map(sizes), [[], []], 'nothing left after an input batch');
    writer.collect(18, 0);
    writer.collect(19, 0);
    writer.batchEnded();
    assert.deepEqual(received().map(sizes), [[10], [10]], 'a full batch leaves at once');
    writer.collect(20, 0);
    writer.batchEnded();
    writer.flushPartial();
    assert.deepEqual(received().map(sizes), [[1], []], 'the task waits: what is partly filled leaves');
  });

  test('a watermark sends what was collected before it at once, and itself ahead of the next batch or when the task waits', () => {
    const { writer, received } = rebalanced(10);
    for (let i = 0; i < 4; i++) writer.collect(i, i);
    writer.batchEnded();
    writer.emitWatermark(3);
    let [a, b] = received();
    assert.deepEqual(
      a!.map((e) => e.kind),
      [BATCH],
      'records before the watermark leave at once',
    );
    assert.deepEqual(
      b!.map((e) => e.kind),
      [BATCH],
    );
    assert.deepEqual(a![0]!.kind === BATCH && a![0]!.values, [0, 2]);
    writer.collect(4, 4);
    writer.flushPartial();
    [a, b] = received();
    assert.deepEqual(
      a!.map((e) => (e.kind === WATERMARK ? `wm ${e.timestamp}` : e.kind === BATCH ? e.values : e.kind)),
      ['wm 3', [4]],
      'the owed watermark goes ahead of the next batch',
    );
    assert.deepEqual(
      b!.map((e) => (e.kind === WATERMARK ? `wm ${e.timestamp}` : e.kind)),
      ['wm 3'],
      'and to a target with no batch when the task waits',
    );
  });

  test('watermarks with nothing sent between them leave as the latest one; records after a watermark never pass it', () => {
    const { writer, received } = rebalanced(2);
    writer.emitWatermark(1);
    writer.emitWatermark(2);
    writer.collect('x', 3); // to target 0, which now holds [x] behind watermark 2
    writer.emitWatermark(5);
    writer.collect('y', 6); // to target 1
    writer.collect('z', 7); // to target 0
    writer.collect('u', 8); // target 1: [y, u] is full and leaves, behind watermark 5
    writer.flush();
    const show = (els: StreamElement[]) =>
      els.map((e) => (e.kind === WATERMARK ? `wm ${e.timestamp}` : e.kind === BATCH ? e.values.join('') : e.kind));
    assert.deepEqual(received().map(show), [
      ['wm 2', 'x', 'wm 5', 'z'],
      ['wm 5', 'yu'],
    ]);
  });

  test('with a linger, an input batch’s end arms the timer and what has lingered long enough leaves', () => {
    const timers: { at: number; cb: () => void }[] = [];
    const { writer, received, sizes } = rebalanced(10, 50, (at, cb) => timers.push({ at, cb }));
    writer.batchEnded(); // the writer's clock is read at the end of an input batch
    writer.collect(0, 0);
    writer.batchEnded();
    assert.equal(timers.length, 1, 'the linger timer is armed at the end of the input batch');
    assert.deepEqual(received().map(sizes), [[], []]);
    timers[0]!.cb();
    // Not due yet (50 ms have not passed): still held, the timer armed again.
    assert.deepEqual(received().map(sizes), [[], []]);
    assert.equal(timers.length, 2);
    writer.flush();
    assert.deepEqual(received().map(sizes), [[1], []]);
  });
});

test('a HASH edge sends each record to the subtask of its key group, in runs of one key and across them (the last key is remembered)', async () => {
  const fc = (await import('fast-check')).default;
  const { keyGroupOf, normalizeKey, operatorIndexForKeyGroup } = await import('../../src/plan/index.js');
  // Keys as they come: runs of one, -0 beside 0, NaN, numbers past 32 bits, strings, and one object whose field changes between records.
  const box = { id: 0 };
  type Key = { plain: unknown } | { boxed: number };
  const keyOf = (k: Key): unknown => ('boxed' in k ? ((box.id = k.boxed), box) : k.plain);
  const key = fc.oneof(
    fc
      .constantFrom<unknown>(0, -0, NaN, 1, 2 ** 40, 2 ** 40 + 2_000, 'a', '0', null, undefined)
      .map((plain): Key => ({ plain })),
    fc.integer().map((plain): Key => ({ plain })),
    fc.string({ maxLength: 3 }).map((plain): Key => ({ plain })),
    fc.integer({ min: 0, max: 1_000 }).map((boxed): Key => ({ boxed })),
  );
  fc.assert(
    fc.property(
      fc.array(fc.tuple(key, fc.integer({ min: 1, max: 4 })), { maxLength: 40 }),
      fc.integer({ min: 1, max: 5 }),
      (runs, parallelism) => {
        const queues = Array.from({ length: parallelism }, () => new InputQueue(10_000));
        const writer = new RecordWriter(
          [
            {
              kind: 'HASH',
              targets: queues.map((q) => ({ queue: q, channel: 0 })),
              keySelector: (v) => keyOf(v as Key),
              target,
              maxParallelism: 128,
            },
          ],
          1_000,
          0,
          1,
        );
        const expected = queues.map(() => [] as Key[]);
        for (const [k, n] of runs) {
          for (let i = 0; i < n; i++) {
            const at = operatorIndexForKeyGroup(
              keyGroupOf(normalizeKey('boxed' in k ? { id: k.boxed } : k.plain)),
              parallelism,
            );
            expected[at]!.push(k);
            writer.collect(k, 0);
          }
        }
        writer.flush();
        const got = queues.map((q) => {
          const out: unknown[] = [];
          for (let e = q.poll(); e; e = q.poll()) if (e.kind === BATCH) out.push(...e.values);
          return out;
        });
        assert.deepEqual(got, expected);
      },
    ),
    { numRuns: 2_000 },
  );
});
