// The autoscaler on a real cluster: a job that cannot keep up is scaled out to its maximum, and scaled
// back in to its minimum once its load is gone; every decision is on the job with its reason.
import assert from 'node:assert/strict';
import { writeFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { waitFor } from '../helpers.js';

const JOB = resolve(import.meta.dirname, '../fixtures/jobs/throttled.ts');
const GATED = resolve(import.meta.dirname, '../fixtures/jobs/gated-source.ts');
const GATED_SINK = resolve(import.meta.dirname, '../fixtures/jobs/gated-sink.ts');

test('the autoscaler scales a throttled job out to its maximum and, once idle, back in to its minimum', async () => {
  const h = await ClusterHarness.start({
    workers: 2,
    slots: 2,
    coordinatorArgs: ['--autoscale-sustain-ms', '1500', '--autoscale-cooldown-ms', '1500'],
    workerArgs: ['--batch-size', '32'],
  });
  try {
    const load = join(h.dir, 'load');
    await writeFile(load, '');
    const loaded = await loadJobModule(JOB, { cacheDir: join(h.dir, 'c') });
    const params = { load, rate: '1000', workMs: '2' };
    const client = await h.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
      checkpoint: { checkpointDir: join(h.dir, 'ck') },
      autoscale: { min: 1, max: 2 },
    });
    const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    const until = async (what: string, f: (v: JobView) => boolean, timeoutMs = 60_000): Promise<JobView> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = await view();
        if (!v.rescales) throw new Error(`no job view: ${JSON.stringify(v).slice(0, 600)}`);
        if (f(v)) return v;
        if (Date.now() > deadline)
          throw new Error(
            `${what} did not happen within ${timeoutMs} ms: ${JSON.stringify(v.autoscaler)} ${JSON.stringify(v.rescales)}`,
          );
        await sleep(100);
      }
    };
    const out = await until('a scale-out', (v) => v.rescales.length >= 1 && v.rescales[0]!.runningAt !== undefined);
    assert.match(
      out.rescales[0]!.cause,
      /^autoscaler: task .* (backpressured|busy) \d+% of the time for \d+ s: scale out 1 -> 2$/,
    );
    assert.ok(
      out.rescales[0]!.changes.includes('work 1 -> 2') || out.rescales[0]!.changes.some((c) => / 1 -> 2$/.test(c)),
    );
    // Still loaded at its maximum: it holds there, and says so once.
    await until('a hold at the maximum', (v) =>
      v.autoscaler!.decisions.some((d) => d.action === 'hold' && d.limit === 'bound'),
    );
    await rm(load);
    // The decision's outcome is written when the rescaler answers, which is after the job runs again.
    const rescaleDecisions = (v: JobView) => v.autoscaler!.decisions.filter((d) => d.action === 'rescale');
    const back = await until(
      'a scale-in',
      (v) =>
        v.rescales.length >= 2 &&
        v.rescales[1]!.runningAt !== undefined &&
        rescaleDecisions(v).every((d) => d.outcome !== undefined),
    );
    assert.match(back.rescales[1]!.cause, /^autoscaler: no task busier than \d+% \(.*\) for \d+ s: scale in 2 -> 1$/);
    assert.equal(back.state, 'RUNNING');
    assert.equal(back.restarts.length, 0);
    assert.deepEqual(
      rescaleDecisions(back).map((d) => d.outcome),
      ['rescaled', 'rescaled'],
    );
    assert.ok(back.autoscaler!.min === 1 && back.autoscaler!.max === 2);
    await h.waitForLog(h.coordinator, new RegExp(`^job ${jobId} autoscaler: .*scale in 2 -> 1$`));
    await client.cancel(jobId);
    client.close();
  } finally {
    await h.close();
  }
});

test('a source waiting on a long first read is idle, not busy, by the measure the autoscaler acts on', async () => {
  const h = await ClusterHarness.start({
    workers: 1,
    slots: 1,
    coordinatorArgs: ['--autoscale-sustain-ms', '1000', '--autoscale-cooldown-ms', '0'],
  });
  try {
    const gate = join(h.dir, 'gate');
    const loaded = await loadJobModule(GATED, { cacheDir: join(h.dir, 'c') });
    const params = { gate };
    const client = await h.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
      checkpoint: { checkpointDir: join(h.dir, 'ck') },
      autoscale: { min: 1, max: 2 },
    });
    type Metrics = { busy: number; measured: number; recordsIn: number };
    const sourceMetrics = async (): Promise<Metrics> =>
      (await h.http<JobView & { graph: { tasks: { metrics: Metrics }[] } }>(`/api/v1/jobs/${jobId}`)).body.graph
        .tasks[0]!.metrics;
    await waitFor('the source task measured', async () => (await sourceMetrics()).measured === 1);
    // Watched for three times the autoscaler's sustain: a wait under way counted as work made it 100%
    // busy (and scaled out) until the read returned.
    const seen: number[] = [];
    for (const end = Date.now() + 3_000; Date.now() < end; await sleep(200)) {
      const m = await sourceMetrics();
      assert.equal(m.recordsIn, 0, 'still waiting');
      seen.push(m.busy);
    }
    assert.ok(
      seen.every((b) => b < 0.5),
      `busy while waiting: ${seen.join(', ')}`,
    );
    await writeFile(gate, '');
    const outcome = await client.waitForCompletion(jobId);
    assert.equal(outcome.ok, true, outcome.error);
    const view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    assert.deepEqual(view.rescales, [], JSON.stringify(view.autoscaler));
    client.close();
  } finally {
    await h.close();
  }
});

test('a source held back by a stalled sink is backpressured while it waits, not only once the wait ends', async () => {
  const h = await ClusterHarness.start({ workers: 1, slots: 1 });
  try {
    const gate = join(h.dir, 'gate');
    const loaded = await loadJobModule(GATED_SINK, { cacheDir: join(h.dir, 'c') });
    const params = { gate };
    const client = await h.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
    });
    type Metrics = { backpressure: number; measured: number; recordsOut: number };
    const sourceMetrics = async (): Promise<Metrics> =>
      (await h.http<JobView & { graph: { tasks: { metrics: Metrics }[] } }>(`/api/v1/jobs/${jobId}`)).body.graph
        .tasks[0]!.metrics;
    // The source fills what the sink's input holds, then waits for room that does not come.
    let last = -1;
    await waitFor('the source stuck behind the sink', async () => {
      const m = await sourceMetrics();
      const stuck = m.measured === 1 && m.recordsOut > 0 && m.recordsOut === last;
      last = m.recordsOut;
      return stuck;
    });
    // Counted only when the wait ended, it read 0 for as long as the sink stalled.
    const seen: number[] = [];
    for (const end = Date.now() + 2_000; Date.now() < end; await sleep(200))
      seen.push((await sourceMetrics()).backpressure);
    assert.ok(
      seen.every((b) => b > 0.5),
      `backpressure while stuck: ${seen.join(', ')}`,
    );
    await writeFile(gate, '');
    const outcome = await client.waitForCompletion(jobId);
    assert.equal(outcome.ok, true, outcome.error);
    client.close();
  } finally {
    await h.close();
  }
});
