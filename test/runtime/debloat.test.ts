// Buffer debloating and time-bounded source reads (runtime/debloat.ts). The end-to-end tests run on the
// tasks' own clock, moved by the slow stage itself (1 ms a record): the rate a task measures, and so the
// batch size it asks for, do not depend on how busy the machine is.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defineJob, startJob, type JobSnapshot } from '../../src/index.js';
import { decodeRecordBatch } from '../../src/protocol/index.js';
import {
  DEBLOAT_FIRST_PERIOD_MS,
  DEBLOAT_INITIAL_BATCH,
  DEBLOAT_PERIOD_MS,
  Debloater,
  initialBatchLimit,
  nextReadSize,
  SLICE_TARGET_MS,
} from '../../src/runtime/debloat.js';
import { DEFAULT_QUEUE_CAPACITY_BATCHES } from '../../src/runtime/local.js';
import { waitFor } from '../helpers.js';

describe('a source read is sized by the time its chain takes', () => {
  test('a read its chain got through within the target grows twofold, up to the batch size', () => {
    assert.equal(nextReadSize(100, 1_000, 100, 1), 200);
    assert.equal(nextReadSize(800, 1_000, 800, SLICE_TARGET_MS), 1_000);
    assert.equal(nextReadSize(1, 1_000, 0, 0), 2, 'an empty read grows it back too');
  });

  test('a read that took longer falls at once to what fits in the target, never below one record', () => {
    // 1 000 records took 5 s: 5 ms a record, 10 fit in 50 ms.
    assert.equal(nextReadSize(1_000, 1_000, 1_000, 5_000), 10);
    assert.equal(nextReadSize(10, 1_000, 1, 500), 1);
  });
});

describe('Debloater', () => {
  const capacity = 8;
  const target = 1_000;

  test('asks for batches at which the queue holds the target of work, measured over a period', () => {
    const d = new Debloater(target, capacity, 1_000, 0, 0);
    assert.equal(d.limit, DEBLOAT_INITIAL_BATCH, 'unmeasured: small batches, so little is queued before it knows');
    assert.equal(initialBatchLimit(1_000, 1_000), DEBLOAT_INITIAL_BATCH, 'what a queue starts with');
    assert.equal(initialBatchLimit(0, 1_000), 0, 'debloating off: no limit');
    d.processed(15);
    assert.equal(d.sample(DEBLOAT_FIRST_PERIOD_MS - 1, 0), DEBLOAT_INITIAL_BATCH, 'not before its first period');
    d.processed(5);
    // 20 records in 20 ms busy: 1 a ms, so 1 000 ms of work is 1 000 records, 125 a batch of 8.
    assert.equal(d.sample(DEBLOAT_FIRST_PERIOD_MS, 0), 125);
    // Then every period: 2 a ms over the next, averaged with the first (1.5 a ms), 188 a batch.
    d.processed(399);
    assert.equal(d.sample(DEBLOAT_FIRST_PERIOD_MS + DEBLOAT_PERIOD_MS - 1, 0), 125, 'not before a period');
    d.processed(1);
    assert.equal(d.sample(DEBLOAT_FIRST_PERIOD_MS + DEBLOAT_PERIOD_MS, 0), 188);
  });

  test('time waiting for input is not counted, and a period all idle changes nothing', () => {
    const d = new Debloater(target, capacity, 1_000, 0, 0);
    d.processed(100);
    // 400 ms elapsed, 300 of them idle: 100 records in 100 ms busy, 1 a ms.
    assert.equal(d.sample(400, 300), 125);
    assert.equal(d.sample(800, 700), 125, 'idle throughout');
  });

  test('a change within the threshold is not asked for; the limit stays within one record and the batch size', () => {
    const d = new Debloater(target, capacity, 1_000, 0, 0);
    d.processed(200);
    assert.equal(d.sample(200, 0), 125);
    d.processed(220); // 1.1 a ms: averaged 1.05, 131 a batch, within 25 % of 125
    assert.equal(d.sample(400, 0), 125);
    const slow = new Debloater(target, capacity, 1_000, 0, 0);
    slow.processed(1);
    assert.equal(slow.sample(10_000, 0), 1);
    const fast = new Debloater(target, capacity, 1_000, 0, 0);
    fast.processed(1_000_000);
    assert.equal(fast.sample(200, 0), 1_000);
  });
});

/** Records written with an unaligned checkpoint: what was queued ahead of its barrier. */
const inflightRecords = (s: JobSnapshot): number =>
  Object.values(s.subtasks)
    .flatMap((sub) => sub.inflight ?? [])
    .reduce((n, b) => n + decodeRecordBatch(b.batch).values.length, 0);

/** What waits ahead of a barrier at a stage taking 1 ms a record (on the tasks' clock), behind a rebalance. */
async function queuedAhead(debloatTargetMs: number): Promise<{ records: number; aheadMs: number }> {
  let clockMs = 0;
  const job = defineJob({ name: 'debloat', version: '1' }, (env) => {
    env
      .fromSequence(1, 10_000_000)
      .rebalance()
      .map((n) => {
        clockMs += 1;
        return n;
      })
      .sinkTo('blackhole');
  });
  const exec = startJob(job, { parallelism: 1, debloatTargetMs, taskClock: () => clockMs });
  try {
    await waitFor('the slow stage measured', () =>
      exec.metrics().some((t) => t.task.includes('map') && t.recordsIn >= 3_000),
    );
    const records = inflightRecords(await exec.triggerCheckpoint({ unaligned: true }));
    return { records, aheadMs: records * 1 };
  } finally {
    exec.cancel('measured');
    await exec.done.catch(() => undefined);
  }
}

describe('buffer debloating (local runtime)', () => {
  test('a slow stage asks for small batches: about the target of its work waits ahead of a barrier, not its whole queue', async () => {
    const off = await queuedAhead(0);
    const on = await queuedAhead(1_000);
    // Off: the queue's 8 batches of 1 000 records (8 s of work here). On: batches of 125, about 1 s, and
    // the source reads no more than a batch ahead of what its receiver has room for.
    assert.ok(off.records >= (DEFAULT_QUEUE_CAPACITY_BATCHES / 2) * 1_000, `off: ${off.records} records ahead`);
    assert.ok(on.aheadMs <= 1_000 + 2 * 125, `on: ${on.records} records (${on.aheadMs} ms) ahead`);
    assert.ok(on.aheadMs >= 1_000 - 2 * 125, `on: the queue still holds about the target: ${on.records}`);
  });
});
