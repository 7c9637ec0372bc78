// Unaligned checkpoints in one process: a barrier overtakes the records queued ahead of it, those records
// are written with the checkpoint, and a restore (at the same parallelism or another) replays them before
// anything new, so the output is exactly an uninterrupted run's.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  defineJob,
  runJob,
  startJob,
  type JobDefinition,
  type JobSnapshot,
  type KeyedProcessFunction,
} from '../../src/index.js';
import { BARRIER, BATCH, END, WATERMARK, type StreamElement } from '../../src/runtime/index.js';
import { InflightCapture } from '../../src/runtime/inflight.js';
import { decodeRecordBatch } from '../../src/protocol/index.js';
import { sortBy, waitFor } from '../helpers.js';

const RECORDS = 20_000;

/** Spin for `us` microseconds: a stage slower than its input, so records queue ahead of it. */
function spin(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until);
}

/** A sum and count per key, emitted at the end of input. */
const SUM_PER_KEY: KeyedProcessFunction<
  { key: number; n: number },
  number,
  { key: number; sum: number; count: number }
> = {
  processElement(r, ctx) {
    const sum = ctx.state.value<number>('sum');
    const count = ctx.state.value<number>('count');
    sum.update((sum.value() ?? 0) + r.n);
    count.update((count.value() ?? 0) + 1);
    ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
  },
  onTimer(_t, ctx, out) {
    out.collect({
      key: ctx.key,
      sum: ctx.state.value<number>('sum').value() ?? 0,
      count: ctx.state.value<number>('count').value() ?? 0,
    });
  },
};

/**
 * Sequence -> rebalance -> a slow map -> keyBy -> a sum per key emitted at the end of input. The map
 * spins `slowUs`, and calls `onRecord` (which moves a test's clock).
 */
function slowJob(slowUs: number, onRecord?: () => void): JobDefinition {
  return defineJob({ name: 'unaligned', version: '1' }, (env) => {
    env
      .fromSequence(1, RECORDS)
      .rebalance()
      .map((n) => {
        onRecord?.();
        spin(slowUs);
        return { key: n % 37, n };
      })
      .keyBy((r) => r.key)
      .process(SUM_PER_KEY)
      .collect('sums');
  });
}

const inflightOf = (s: JobSnapshot): { records: number; subtasks: string[] } => {
  let records = 0;
  const subtasks: string[] = [];
  for (const [key, sub] of Object.entries(s.subtasks)) {
    if (!sub.inflight?.length) continue;
    subtasks.push(key);
    for (const b of sub.inflight) records += decodeRecordBatch(b.batch).values.length;
  }
  return { records, subtasks };
};

describe('unaligned checkpoints (local runtime)', () => {
  test('taken under backpressure, the records in flight are written with it; a restore at 2, 1 and 3 gives exactly the uninterrupted output', async () => {
    const job = slowJob(40);
    const expected = await runJob(job, { parallelism: 2 });
    const exec = startJob(job, { parallelism: 2 });
    await waitFor('records through the slow stage', () =>
      exec.metrics().some((t) => t.task.includes('map') && t.recordsIn >= 2_000),
    );
    const snapshot = await exec.triggerCheckpoint({ unaligned: true });
    exec.cancel('stopped by the test after its checkpoint');
    await exec.done.catch(() => undefined);
    const inflight = inflightOf(snapshot);
    assert.ok(inflight.records > 0, 'records were queued ahead of the barrier, and kept');
    assert.ok(
      inflight.subtasks.every((k) => /map|keyedProcess/.test(k)),
      `only tasks with inputs hold records in flight: ${inflight.subtasks.join(', ')}`,
    );
    for (const parallelism of [2, 1, 3]) {
      const restored = await runJob(job, { parallelism, restore: snapshot });
      assert.deepEqual(
        sortBy(restored.collected.sums!),
        sortBy(expected.collected.sums!),
        `at parallelism ${parallelism}`,
      );
    }
  });

  /**
   * The slow job on the tasks' clock, moved 1 ms by each record the map takes (a batch of 1 000 is 1 s
   * of work, a slice 50 records: SLICE_TARGET_MS); the map spins too, so the job is mid-stream
   * when asked. Started (from `restore`, if given), an unaligned checkpoint once the map has taken
   * `after` records, then canceled: the checkpoint, and how many records of work it took.
   */
  const clocked = () => {
    let clockMs = 0;
    const job = slowJob(100, () => (clockMs += 1));
    const checkpointAfter = async (after: number, restore?: JobSnapshot) => {
      const exec = startJob(job, { parallelism: 2, taskClock: () => clockMs, ...(restore ? { restore } : {}) });
      await waitFor(`${after} records through the slow stage`, () =>
        exec.metrics().some((t) => t.task.includes('map') && t.recordsIn >= after),
      );
      const triggeredAt = clockMs;
      const snapshot = await exec.triggerCheckpoint({ unaligned: true });
      const took = clockMs - triggeredAt;
      exec.cancel('stopped by the test after its checkpoint');
      await exec.done.catch(() => undefined);
      return { snapshot, took };
    };
    return { job, checkpointAfter };
  };

  test('a batch slower than a slice is processed in slices: the barrier overtakes the rest of it, which is kept and replayed exactly', async () => {
    const { job, checkpointAfter } = clocked();
    const expected = await runJob(job, { parallelism: 2 });
    const { snapshot, took } = await checkpointAfter(3_000);
    // Each map subtask took the barrier at its next slice's end, not its batch's: a few slices of work.
    assert.ok(took < 500, `the checkpoint took ${took} records of the slow stage's work`);
    assert.ok(inflightOf(snapshot).records > 0, 'records were in flight');
    for (const parallelism of [2, 3]) {
      const restored = await runJob(job, { parallelism, restore: snapshot });
      assert.deepEqual(sortBy(restored.collected.sums!), sortBy(expected.collected.sums!), `at ${parallelism}`);
    }
  });

  test('records in flight being replayed after a restore are overtaken by the next unaligned barrier, kept with its checkpoint and replayed exactly', async () => {
    const { job, checkpointAfter } = clocked();
    const expected = await runJob(job, { parallelism: 2 });
    const first = await checkpointAfter(3_000);
    const restored = inflightOf(first.snapshot).records;
    // Restored: the map subtasks replay what was in flight first. A checkpoint asked for as the replay
    // starts is taken a few slices in, not after the whole replay.
    const { snapshot, took } = await checkpointAfter(1, first.snapshot);
    assert.ok(restored >= 1_000, `${restored} records were in flight at the first checkpoint`);
    assert.ok(took < restored / 4, `the checkpoint took ${took} records of work, of ${restored} to replay`);
    assert.ok(inflightOf(snapshot).records > 0, 'what was left to replay is in flight again');
    for (const parallelism of [2, 3]) {
      const run = await runJob(job, { parallelism, restore: snapshot });
      assert.deepEqual(sortBy(run.collected.sums!), sortBy(expected.collected.sums!), `at ${parallelism}`);
    }
  });
});

describe('an aligned checkpoint converted to unaligned in place (adaptive alignment)', () => {
  /**
   * Sequence -> rebalance -> a stage whose second subtask is slow (1 ms a record on the tasks' clock)
   * -> keyBy -> a sum per key at the end of input. Its fast subtask passes the barrier at once, so the
   * keyed task aligns, holding that channel, while the barrier waits behind the slow one's backlog.
   */
  const skewed = () => {
    let clockMs = 0;
    const job = defineJob({ name: 'skewed', version: '1' }, (env) => {
      env
        .fromSequence(1, RECORDS)
        .rebalance()
        .process<{ key: number; n: number }>({
          processElement(n, ctx, out) {
            if (ctx.subtaskIndex === 1) {
              clockMs += 1;
              spin(100);
            }
            out.collect({ key: n % 37, n });
          },
        })
        .keyBy((r) => r.key)
        .process(SUM_PER_KEY)
        .collect('sums');
    });
    return { job, clock: () => clockMs };
  };

  test('converted while its barrier waits behind a backlog and the next task aligns: taken at once, the records in flight kept, a restore at 2 and 3 exact', async () => {
    const { job, clock } = skewed();
    const expected = await runJob(job, { parallelism: 2 });
    const exec = startJob(job, { parallelism: 2, taskClock: clock });
    await waitFor('records through the slow subtask', () => clock() >= 2_000);
    const triggeredAt = clock();
    const checkpoint = exec.triggerCheckpoint();
    await waitFor('the aligned barrier behind 200 records of backlog', () => clock() >= triggeredAt + 200);
    const convertedAt = clock();
    exec.convertCheckpoints();
    const snapshot = await checkpoint;
    const afterConversion = clock() - convertedAt;
    exec.cancel('stopped by the test after its checkpoint');
    await exec.done.catch(() => undefined);
    const inflight = inflightOf(snapshot);
    // Aligned, the slow subtask would have worked through the whole backlog first; converted, it took
    // its barrier at its next slice's end, and the backlog is written with the checkpoint.
    assert.ok(inflight.records > 0, 'the backlog ahead of the barrier is in flight');
    assert.ok(
      afterConversion < inflight.records,
      `once converted it took ${afterConversion} records of the slow subtask's work, less than the ${inflight.records} it overtook`,
    );
    assert.deepEqual(inflight.subtasks, ['_inline_process_0#1'], 'only the slow subtask had records queued');
    for (const parallelism of [2, 3]) {
      const restored = await runJob(job, { parallelism, restore: snapshot });
      assert.deepEqual(sortBy(restored.collected.sums!), sortBy(expected.collected.sums!), `at ${parallelism}`);
    }
  });
});

describe('the in-flight records of one unaligned checkpoint at a task (InflightCapture)', () => {
  const batch = (channel: number, ...values: number[]): StreamElement => ({
    kind: BATCH,
    channel,
    values,
    timestamps: values.map(() => 0),
  });
  const kept = (c: InflightCapture): number[][] =>
    c.batches.map((b) => [b.input, ...(decodeRecordBatch(b.batch).values as number[])]);

  test('a channel whose barrier is still to come: everything it delivers until the barrier', () => {
    const c = new InflightCapture(1, [false, false], [0, 1]);
    c.barrier(0, 2, 0); // channel 0's barrier, queued after elements 0 and 1
    c.take(batch(0, 1), 0);
    c.take(batch(1, 2), 1);
    c.take(batch(0, 3), 2); // after channel 0's barrier: not in flight
    c.scanned();
    assert.equal(c.complete, false, 'channel 1 owes its barrier');
    c.take(batch(1, 4), 3);
    c.take({ kind: WATERMARK, channel: 1, timestamp: 5 }, 4);
    c.barrier(1, 5, 0);
    c.take(batch(1, 6), 5);
    assert.equal(c.complete, true);
    assert.deepEqual(kept(c), [
      [0, 1],
      [1, 2],
      [1, 4],
    ]);
  });

  test('what a barrier overtook in its sender comes after it and is kept; an ended channel owes nothing', () => {
    const c = new InflightCapture(1, [false, false, true], [0, 0, 0]);
    c.barrier(0, 1, 2); // it overtook two elements still on their way
    c.take(batch(0, 1), 0);
    c.scanned();
    c.take(batch(0, 2), 1);
    c.take({ kind: WATERMARK, channel: 0, timestamp: 1 }, 2); // the second overtaken element
    c.take(batch(0, 3), 3); // after them: not in flight
    c.take(batch(1, 9), 4);
    assert.equal(c.complete, false);
    c.take({ kind: END, channel: 1 }, 5);
    assert.equal(c.complete, true);
    assert.deepEqual(kept(c), [
      [0, 1],
      [0, 2],
      [0, 9],
    ]);
    assert.ok(c.bytes > 0);
  });

  test('converted from aligned: a channel whose barrier the alignment took owes nothing; an aligned barrier queued later ends its channel', () => {
    const c = new InflightCapture(1, [false, false, false], [0, 1, 1]);
    c.delivered(0);
    c.take(batch(0, 1), -1); // held by the alignment, after channel 0's barrier
    c.take(batch(1, 2), 0);
    c.take({ kind: BARRIER, channel: 1, checkpointId: 1 }, 1); // channel 1's, aligned, queued before the conversion
    c.take(batch(1, 3), 2);
    c.scanned();
    assert.equal(c.complete, false, 'channel 2 owes its barrier');
    c.take(batch(2, 4), 3);
    c.take({ kind: BARRIER, channel: 2, checkpointId: 0 }, 4); // an older checkpoint's: not this one's end
    c.take(batch(2, 5), 5);
    c.take({ kind: BARRIER, channel: 2, checkpointId: 1 }, 6);
    c.take(batch(2, 6), 7);
    assert.equal(c.complete, true);
    assert.deepEqual(kept(c), [
      [1, 2],
      [1, 4],
      [1, 5],
    ]);
  });

  test('a barrier queued before the scan with elements overtaken behind it in the queue', () => {
    const c = new InflightCapture(1, [false], [0]);
    c.barrier(0, 1, 1);
    c.take(batch(0, 1), 0);
    c.take(batch(0, 2), 1); // the overtaken one, already queued when the task scans
    c.take(batch(0, 3), 2);
    c.scanned();
    assert.equal(c.complete, true);
    assert.deepEqual(kept(c), [
      [0, 1],
      [0, 2],
    ]);
  });
});
