import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadJobModule } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';
import { sortBy, waitFor } from '../helpers.js';
import { ClusterHarness } from '../harness/cluster.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/jobs');
const job = (name: string): string => join(FIXTURES, `${name}.ts`);

describe('a cluster of a coordinator and three workers', () => {
  let h: ClusterHarness;
  before(async () => {
    h = await ClusterHarness.start({ workers: 3, slots: 3, coordinatorArgs: ['--submit-wait-for-slots-ms=0'] });
  });
  after(async () => {
    await h?.close();
  });

  test('keyed and windowed jobs spread over the workers give exactly the local runtime’s results', async () => {
    const params = { count: '30000' };
    const { jobId, client } = await h.submit(job('keyed-windows'), { parallelism: 3, params });
    const outcome = await client.waitForCompletion(jobId);
    assert.equal(outcome.ok, true, outcome.error);
    const view = (
      await h.http<{ subtasks: { workerId: string }[]; edges: { local: number; socket: number } }>(
        `/api/v1/jobs/${jobId}`,
      )
    ).body;
    assert.equal(new Set(view.subtasks.map((s) => s.workerId)).size, 3, 'the subtasks ran on all three workers');
    assert.ok(view.edges.socket > 0, `the hash exchanges crossed processes (${JSON.stringify(view.edges)})`);
    const local = await runJob((await loadJobModule(job('keyed-windows'), { cacheDir: join(h.dir, 'local') })).job, {
      parallelism: 3,
      params,
    });
    for (const name of ['windows', 'totals']) {
      assert.ok((local.collected[name] ?? []).length > 0);
      assert.deepEqual(sortBy(outcome.collected[name]!), sortBy(local.collected[name]!), name);
    }
  });

  test('cancel stops a running job, frees its slots, and ends it CANCELED', async () => {
    const { jobId, client } = await h.submit(job('unbounded'), { parallelism: 2 });
    await h.waitForJob(jobId, ['RUNNING']);
    // Two tasks at parallelism 2 share 2 slots (slot sharing).
    assert.equal((await h.http<{ slotsFree: number }>('/api/v1/workers')).body.slotsFree, 9 - 2);
    const r = await client.cancel(jobId);
    assert.equal(r.ok, true);
    const outcome = await client.waitForCompletion(jobId);
    assert.equal(outcome.state, 'CANCELED');
    assert.equal((await h.http<{ slotsFree: number }>('/api/v1/workers')).body.slotsFree, 9);
    const cancelledAgain = await client.cancel(jobId);
    assert.equal(cancelledAgain.ok, false);
    assert.match(cancelledAgain.message, /already ended \(CANCELED\)/);
  });

  test('a job that needs more slots than are free is refused at once, with the numbers', async () => {
    await assert.rejects(
      h.submit(job('keyed-windows'), { parallelism: 10 }),
      /not enough free slots: the job needs 10 \(slot sharing group 'default': 10\), 9 of the cluster's 9 are free/,
    );
  });

  test('a dropped client does not stop its job', async () => {
    const { jobId, client } = await h.submit(job('keyed-windows'), { parallelism: 1, params: { count: '5000' } });
    client.close();
    const done = await h.waitForJob<{ state: string; sinkRecords: number }>(jobId, ['FINISHED', 'FAILED']);
    assert.equal(done.state, 'FINISHED');
  });

  test("a client waits for another client's job to end (followed through ListJobs); an unknown job is not found", async () => {
    const { jobId, client } = await h.submit(job('keyed-windows'), { parallelism: 1, params: { count: '5000' } });
    const other = await h.client();
    const [theirs, mine] = await Promise.all([
      other.waitForCompletion(jobId, { pollMs: 50 }),
      client.waitForCompletion(jobId),
    ]);
    assert.deepEqual(
      [theirs.state, theirs.ok, theirs.collected],
      ['FINISHED', true, {}],
      'collected results go to the submitter',
    );
    assert.equal(mine.state, 'FINISHED');
    assert.ok(Object.keys(mine.collected).length > 0);
    await assert.rejects(other.waitForCompletion('nosuchjob'), {
      code: 'CLINK_ERR_NOT_FOUND',
      message: 'job nosuchjob is not known to the coordinator (it lists running jobs and its recently ended ones)',
    });
  });

  test('a client that sends nothing does not hold up a worker registering', async () => {
    const idle = connect(h.controlPort, '127.0.0.1');
    await new Promise((r) => idle.once('connect', r));
    const w = await h.addWorker();
    await h.waitForWorkers(4);
    // From the worker's process being up (its HTTP API, served before it dials) to its registration, by
    // its own log's clock: a coordinator waiting on the silent client would take its handshake timeout
    // (5 s). Spawning the process through tsx is not counted (seconds on a loaded machine).
    await waitFor('the worker logging its registration', () =>
      w.logs.some((l) => /^registered with the coordinator/.test(String(l.msg))),
    );
    const at = (re: RegExp) => Number(w.logs.find((l) => re.test(String(l.msg)))!.time);
    const ms = at(/^registered with the coordinator/) - at(/^HTTP API on /);
    assert.ok(ms < 5_000, `registered ${ms} ms after its HTTP API was up`);
    idle.destroy();
  });

  test('a malformed first frame and a 4 GiB header cost only their own connections', async () => {
    const send = (bytes: Buffer): Promise<void> =>
      new Promise((res) => {
        const s = connect(h.controlPort, '127.0.0.1', () => s.write(bytes));
        s.on('error', () => undefined);
        s.on('close', () => res());
      });
    await send(Buffer.from([0, 0, 0, 3, 250, 1, 2])); // unknown kind
    await send(Buffer.from([0xff, 0xff, 0xff, 0xff])); // 4 GiB header
    await send(Buffer.concat([Buffer.from([0, 0, 0, 5]), Buffer.from([101, 0, 0, 0, 0])])); // a Deploy as a first frame
    const metrics = (await h.http('/metrics')).text;
    assert.match(metrics, /clink_malformed_frames_total\{role="coordinator"\} 3/);
    assert.equal((await h.http<{ status: string }>('/api/v1/health')).body.status, 'ok');
    const { jobId, client } = await h.submit(job('trivial'));
    const outcome = await client.waitForCompletion(jobId);
    assert.deepEqual(outcome.collected.default?.sort(), [2, 4, 6]);
  });

  test('the HTTP API serves metrics, jobs, workers and the settings in effect', async () => {
    const metrics = (await h.http('/metrics')).text;
    for (const name of [
      'clink_malformed_frames_total',
      'clink_coordinator_outbound_frames_discarded_total',
      'clink_protocol_mismatches_total',
      'clink_coordinator_workers_registered',
      'clink_coordinator_slots_free',
      'clink_coordinator_jobs_submitted_total',
    ]) {
      assert.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    const workers = (
      await h.http<{ workers: { workerId: string; slotsTotal: number }[]; slotsTotal: number }>('/api/v1/workers')
    ).body;
    assert.equal(workers.slotsTotal, workers.workers.length * 3);
    const jobs = (await h.http<{ jobs: { jobId: string; state: string }[] }>('/api/v1/jobs')).body.jobs;
    assert.ok(jobs.length >= 4);
    assert.equal((await h.http(`/api/v1/jobs/${jobs[0]!.jobId}`)).status, 200);
    assert.equal((await h.http('/api/v1/jobs/nope')).status, 404);
    const config = (await h.http<Record<string, unknown>>('/api/v1/config')).body;
    assert.equal(config.heartbeatTimeoutMs, 2_000);
    assert.equal(config.watchdogIntervalMs, 100);
    assert.equal(config.outboundStallTimeoutMs, 10_000);
    assert.equal(config.maxOutboundControlFrames, 10_000);
  });
});

test('timeouts above the timer limit (~24.8 days) mean never: with --heartbeat-timeout-ms of 34 days workers register, stay, and run a job', async () => {
  // Node fires a timer of more than 2^31 - 1 ms after 1 ms; before, this lost every worker at once.
  const h = await ClusterHarness.start({
    workers: 2,
    slots: 2,
    coordinatorArgs: ['--heartbeat-timeout-ms=3000000000', '--outbound-stall-timeout-ms=3000000000'],
  });
  try {
    const { jobId, client } = await h.submit(job('trivial'), { parallelism: 2 });
    const outcome = await client.waitForCompletion(jobId);
    assert.equal(outcome.ok, true, outcome.error);
    await h.waitForWorkers(2);
    assert.ok(
      !h.coordinator.logs.some((l) => /worker lost|connection rejected/.test(String(l.msg))),
      'no worker lost, no registration refused',
    );
  } finally {
    await h.close();
  }
});

test('a job that cannot start (a throw in open()) fails at once with its message; a misspelled connector or options it refuses are refused at submit; the worker keeps its session and its other job', async () => {
  const h = await ClusterHarness.start({ workers: 1, slots: 6, coordinatorArgs: ['--max-restarts=3'] });
  try {
    const { jobId: other, client } = await h.submit(job('unbounded'), { parallelism: 2 });
    await h.waitForJob(other, ['RUNNING']);
    await assert.rejects(
      h.submit(job('bad-start'), { parallelism: 1, client, params: { mode: 'connector' } }),
      /names connector 'datagn', which this build does not have/,
    );
    await assert.rejects(
      h.submit(job('bad-start'), { parallelism: 1, client, checkpoint: { checkpointDir: join(h.dir, 'ckpt') } }),
      /^ConnectorError: operator '_inline_source_0': datagen: invalid options: option count: expected >= 0, got -5$/,
    );
    const opened = await h.submit(job('bad-start'), {
      parallelism: 1,
      client,
      params: { mode: 'open' },
      checkpoint: { checkpointDir: join(h.dir, 'ckpt') },
    });
    const failed = await client.waitForCompletion(opened.jobId);
    assert.equal(failed.state, 'FAILED');
    assert.match(failed.error, /cannot reach the lookup service/);
    const view = (await h.http<{ restarts: unknown[] }>(`/api/v1/jobs/${opened.jobId}`)).body;
    assert.equal(view.restarts.length, 0, 'a failure at start is not restarted: it would recur');
    assert.equal(
      (await h.http<{ state: string }>(`/api/v1/jobs/${other}`)).body.state,
      'RUNNING',
      'the other job runs on',
    );
    const workers = (await h.http<{ workers: { session: number }[] }>('/api/v1/workers')).body.workers;
    assert.deepEqual(
      workers.map((w) => w.session),
      [1],
      'the same session: never lost',
    );
    await client.cancel(other);
  } finally {
    await h.close();
  }
});
