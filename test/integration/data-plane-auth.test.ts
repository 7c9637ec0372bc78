// The data-plane injection of issue 17, replayed against a real cluster: a peer that read the job, task and
// attempt from the HTTP API opens a data connection to a worker and sends a DataHello and a DataBatch of
// fabricated records. Without the attempt's secret its hello is refused and counted, and the job's
// committed output is exactly the uninterrupted run's.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { createPhysicalPlan, taskOf } from '../../src/plan/index.js';
import { encodeFrame, encodeRecordBatch, makeMessage } from '../../src/protocol/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { SINK_JOB, submitSinkJob } from '../harness/file-sink-job.js';
import { visibleLines, waitFor } from '../helpers.js';

describe('the data plane proves the deploy attempt', () => {
  test('a DataHello without the attempt secret (or with a forged MAC) is refused and counted; no fabricated record reaches the output', async () => {
    // Subtasks on the session's own loop, so the data port they listen on is the one the ready file names
    // (a job thread listens on a port of its own, with the same checks). Their work delays the session's
    // heartbeats, so on a busy machine the coordinator is patient with them: the only restart this test
    // could see is one the forged connections caused.
    const h = await ClusterHarness.start({
      workers: 2,
      slots: 2,
      workerArgs: ['--task-isolation=none', '--coordinator-heartbeat-timeout-ms=60000'],
      coordinatorArgs: ['--heartbeat-timeout-ms=60000'],
    });
    try {
      const { jobId, client, out, expected } = await submitSinkJob(h, { rate: 2000 });
      const view = await h.waitForJob<JobView>(jobId, ['RUNNING']);
      // What an attacker reads from the API and the job file: the shuffle edge and the task it feeds.
      const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(h.dir, 'c') });
      const plan = createPhysicalPlan(buildJob(loaded.job, { parallelism: 2, params: { out, rate: '2000' } }).spec);
      const edgeIndex = plan.spec.edges.findIndex((e) => e.kind === 'HASH');
      const down = taskOf(plan, plan.spec.edges[edgeIndex]!.target);
      const up = taskOf(plan, plan.spec.edges[edgeIndex]!.source);
      const target = view.subtasks.find((t) => t.taskId === down.id && t.index === 0)!;
      const worker = h.worker(target.workerId);
      const dataPort = (JSON.parse(await readFile(worker.readyFile!, 'utf8')) as { dataPort: number }).dataPort;
      const hello = {
        jobId,
        attempt: target.attempt,
        edgeIndex,
        upstreamSubtask: 0,
        downstreamTaskId: down.id,
        downstreamSubtask: 0,
        upstreamTaskId: up.id,
      };
      const forged = [1, 2, 3, 4, 5].map((i) => ({ user: i, amount: 1_000_000, ts: 1_000 }));
      for (const mac of ['', 'ab'.repeat(32)]) {
        const closed = await new Promise<boolean>((resolve) => {
          const s = connect(dataPort, '127.0.0.1');
          s.on('error', () => undefined);
          s.once('connect', () => {
            s.write(encodeFrame(makeMessage('DataHello', { ...hello, mac })));
            s.write(
              encodeFrame(
                makeMessage('DataBatch', {
                  batch: encodeRecordBatch(
                    forged,
                    forged.map((r) => r.ts),
                  ),
                }),
              ),
            );
          });
          s.once('close', () => resolve(true));
        });
        assert.ok(closed, 'the connection is closed on it');
      }
      await waitFor(
        'both refusals counted',
        async () =>
          (await h.workerMetric(worker, 'clink_data_connections_refused_total', { reason: 'bad_secret' })) === 2,
      );
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual(
        await visibleLines(out),
        expected,
        'exactly the uninterrupted output: nothing fabricated got in',
      );
      assert.equal(
        (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body.restarts.length,
        0,
        'and nothing restarted the job',
      );
    } finally {
      await h.close();
    }
  });

  test("in job threads too: their data ports are advertised, and a forged DataHello there is refused and counted in the worker's /metrics", async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2 });
    try {
      const { jobId, client, out, expected } = await submitSinkJob(h, { rate: 2000 });
      const view = await h.waitForJob<JobView>(jobId, ['RUNNING']);
      const worker = h.worker('w1');
      const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(h.dir, 'c') });
      const plan = createPhysicalPlan(buildJob(loaded.job, { parallelism: 2, params: { out, rate: '2000' } }).spec);
      const edgeIndex = plan.spec.edges.findIndex((e) => e.kind === 'HASH');
      const down = taskOf(plan, plan.spec.edges[edgeIndex]!.target);
      const target = view.subtasks.find((t) => t.taskId === down.id && t.index === 0)!;
      // Where the job's thread listens: in the ready file and in GET /api/v1/worker.
      const { jobDataPorts } = (await (await fetch(`http://127.0.0.1:${worker.httpPort}/api/v1/worker`)).json()) as {
        jobDataPorts: number[];
      };
      assert.ok(jobDataPorts.length >= 1, JSON.stringify(jobDataPorts));
      const hello = {
        jobId,
        attempt: target.attempt,
        edgeIndex,
        upstreamSubtask: 0,
        downstreamTaskId: down.id,
        downstreamSubtask: 0,
        upstreamTaskId: taskOf(plan, plan.spec.edges[edgeIndex]!.source).id,
        mac: 'ab'.repeat(32),
      };
      for (const port of jobDataPorts) {
        await new Promise<void>((resolve) => {
          const s = connect(port, '127.0.0.1');
          s.on('error', () => undefined);
          s.once('connect', () => s.write(encodeFrame(makeMessage('DataHello', hello))));
          s.once('close', () => resolve());
        });
      }
      await waitFor(
        "the refusal counted in the worker's /metrics",
        async () =>
          (await h.workerMetric(worker, 'clink_data_connections_refused_total', { reason: 'bad_secret' })) === 1,
      );
      assert.equal(
        await h.workerMetric(worker, 'clink_connections_rejected_total', { role: 'worker.data', reason: 'refused' }),
        jobDataPorts.length,
      );
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual(await visibleLines(out), expected);
    } finally {
      await h.close();
    }
  });
});
