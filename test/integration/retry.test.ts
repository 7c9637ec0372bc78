import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobRetry, JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';
import { sortBy, visibleLines } from '../helpers.js';
import { ClusterHarness } from '../harness/cluster.js';

const FLAKY = resolve(import.meta.dirname, '../fixtures/jobs/flaky.ts');

describe('per-subtask retries of jobs without checkpoints (max_restarts)', () => {
  let h: ClusterHarness;
  let n = 0;
  /** A fresh directory for the fixture's fail-once markers. */
  const markers = async (): Promise<string> => {
    const dir = join(h.dir, `markers-${n++}`);
    await mkdir(dir);
    return dir;
  };
  const view = async (jobId: string): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
  before(async () => {
    h = await ClusterHarness.start({ workers: 2, slots: 4, coordinatorArgs: ['--max-restarts', '2'] });
  });
  after(async () => {
    await h?.close();
  });

  test('a chained job: only the failed subtask is run again, from the beginning, and collect() returns every record exactly once', async () => {
    const params = { count: '40000', failAt: '25000', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 4, params, checkpoint: { maxRestarts: 1 } });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    assert.deepEqual(
      sortBy(done.collected.default!, (x) => x as number),
      Array.from({ length: 40_000 }, (_, i) => i + 1),
    );
    const v = await view(jobId);
    assert.equal(v.retries.length, 1);
    const r = v.retries[0]!;
    assert.match(r.cause, /record 25000 fails/);
    assert.equal(r.retry, 1);
    assert.equal(r.subtasks, 1, 'its failover region is the one pipeline instance');
    assert.ok(r.deployedAt >= r.at);
    const retried = v.subtasks.filter((t) => t.attempt > 0);
    assert.deepEqual(
      retried.map((t) => `${t.taskId}#${t.index}`),
      [r.subtask],
    );
    assert.equal(v.subtasks.filter((t) => t.attempt === 0).length, 3, 'the other three subtasks ran on untouched');
    assert.equal(await h.metric('clink_job_subtask_retries_total'), 1);
  });

  test('a retry redeployed beside still-running subtasks of the same job and worker leaves them running', async () => {
    // Instances spread two a worker; the retried one goes back to the worker with the most free slots,
    // its own (its slot came free), where an instance of its first deploy keeps running.
    const params = { count: '6000', rate: '3000', failAt: '6', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 4, params, checkpoint: { maxRestarts: 1 } });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    assert.deepEqual(
      sortBy(done.collected.default!, (x) => x as number),
      Array.from({ length: 6_000 }, (_, i) => i + 1),
    );
    const v = await view(jobId);
    assert.equal(v.retries.length, 1, JSON.stringify(v.retries));
    assert.equal(v.subtasks.filter((t) => t.attempt === 0).length, 3, 'the other three ran on, never cancelled');
    const retried = v.subtasks.find((t) => t.attempt === 1)!;
    assert.ok(
      v.subtasks.some((t) => t.attempt === 0 && t.workerId === retried.workerId),
      `the retry ran beside first-attempt subtasks of its worker: ${JSON.stringify(v.subtasks)}`,
    );
  });

  test('a shuffled job: the region is the whole job, re-run from the beginning; its output equals an uninterrupted run', async () => {
    const params = { count: '30000', failAt: '7000,22000', shuffle: '1', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 2, params });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    const local = await runJob((await loadJobModule(FLAKY, { cacheDir: join(h.dir, 'local') })).job, {
      parallelism: 2,
      params: { count: '30000', shuffle: '1' },
    });
    assert.equal(local.collected.default!.length, 30_000);
    assert.deepEqual(sortBy(done.collected.default!), sortBy(local.collected.default!));
    const v = await view(jobId);
    // Each failing record failed once; when the second fails while the first's retry drains the region
    // (both subtasks are in it), one retry covers both.
    assert.ok(
      v.retries.length >= 1 && v.retries.length <= 2,
      `one retry per failure, or one for both: ${JSON.stringify(v.retries)}`,
    );
    for (const r of v.retries) assert.equal(r.subtasks, 4);
    assert.ok(
      v.subtasks.every((t) => t.attempt === v.retries.length),
      JSON.stringify(v.subtasks),
    );
  });

  test('a sink that publishes as it goes (file parts that roll) gets what the failed attempt wrote again: at-least-once', async () => {
    const out = join(h.dir, 'out');
    const params = { count: '20000', failAt: '15000', out, rollBytes: '2048', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 1, params });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    const lines = (await visibleLines(out)).map(Number);
    const seen = new Map<number, number>();
    for (const x of lines) seen.set(x, (seen.get(x) ?? 0) + 1);
    for (let x = 1; x <= 20_000; x++) assert.ok((seen.get(x) ?? 0) >= 1, `record ${x} is in the output`);
    assert.ok(
      lines.length > 20_000,
      `the failed attempt's published parts stay: ${lines.length} lines for 20000 records`,
    );
    assert.equal((await view(jobId)).retries.length, 1);
  });

  test('the budget: a subtask that keeps failing fails the job after the coordinator default of 2 retries, saying so', async () => {
    const params = { count: '10000', failAt: '3000', always: '1', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 2, params });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, false);
    assert.match(done.error, /record 3000 fails/);
    assert.match(done.error, /failed 3 times and the 2 retries allowed \(--max-region-retries 2\) are spent/);
    const v = await view(jobId);
    assert.deepEqual(
      v.retries.map((r: JobRetry) => r.retry),
      [1, 2],
    );
    assert.equal(v.state, 'FAILED');
  });

  test('max_restarts 0 fails at the first error, with it', async () => {
    const params = { count: '10000', failAt: '3000', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, { parallelism: 2, params, checkpoint: { maxRestarts: 0 } });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, false);
    assert.match(done.error, /record 3000 fails/);
    assert.doesNotMatch(done.error, /retries/);
    assert.deepEqual((await view(jobId)).retries, []);
  });

  test('a job with checkpoints is not retried in part: a subtask error restarts the whole job from its checkpoint, within --max-restarts-from-checkpoint', async () => {
    const params = { count: '10000', failAt: '3000', markers: await markers() };
    const { jobId, client } = await h.submit(FLAKY, {
      parallelism: 2,
      params,
      checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 0, maxRestarts: 3 },
    });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    assert.deepEqual(
      sortBy(done.collected.default!, (x) => x as number),
      Array.from({ length: 10_000 }, (_, i) => i + 1),
      'every record once',
    );
    const v = await view(jobId);
    assert.deepEqual(v.retries, []);
    assert.equal(v.restarts.length, 1);
    assert.match(v.restarts[0]!.cause, /^subtask _inline_source_0#\d failed on worker w\d: .*record 3000 fails/);
    assert.equal(v.restarts[0]!.restoredFrom, 0, 'no checkpoint had completed: from the beginning');

    const again = { count: '10000', failAt: '3000', always: '1', markers: await markers() };
    const off = await h.submit(FLAKY, {
      parallelism: 2,
      params: again,
      checkpoint: { checkpointDir: join(h.dir, 'ckpt2'), maxRestartsOnWorkerLoss: 0 },
    });
    const failed = await off.client.waitForCompletion(off.jobId);
    assert.equal(failed.ok, false);
    assert.match(failed.error, /record 3000 fails.*restarts are off \(--max-restarts-from-checkpoint 0\)/s);
  });

  test('after every retry the slots are all free again', async () => {
    assert.equal((await h.http<{ slotsFree: number }>('/api/v1/workers')).body.slotsFree, 8);
  });
});
