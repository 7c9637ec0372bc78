// The REST API against a real cluster (a coordinator and two worker processes): a running job's graph
// with live per-task rates and local/socket channels, checkpoints, workers, a savepoint and a cancel over
// HTTP, errors as { code, message }; and through inject(): the OpenAPI document, a standby's 503s, a
// worker node's own route.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobDetail, WorkerView } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';

const UNBOUNDED = resolve(import.meta.dirname, '../fixtures/jobs/unbounded.ts');

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('the REST API', () => {
  test('a running job: its graph with per-task rates, placement and channels; checkpoints; workers; savepoint and cancel over HTTP; errors as { code, message }', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 1 });
    try {
      const loaded = await loadJobModule(UNBOUNDED, { cacheDir: join(h.dir, 'c') });
      const client = await h.client();
      const params = { rate: '5000' };
      const { jobId } = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
        params,
        buildParallelism: 2,
        checkpoint: {
          checkpointDir: join(h.dir, 'ckpt'),
          intervalMs: 200,
          checkpointsRetained: 2,
          minPauseMs: 50,
          tolerableFailures: 5,
        },
      });

      // Rates come from two heartbeats' difference: wait until both tasks report records flowing.
      const job = await until('both tasks reporting a rate', async () => {
        const v = (await h.http<JobDetail>(`/api/v1/jobs/${jobId}`)).body;
        return v.graph?.tasks.every((t) => t.metrics.reporting === 2 && t.metrics.recordsInPerSecond > 0)
          ? v
          : undefined;
      });
      assert.equal(job.state, 'RUNNING');
      const [source, keyed] = job.graph!.tasks;
      assert.match(source!.name, /datagen|source/);
      assert.deepEqual(source!.operators.map((o) => o.type).slice(0, 1), ['source']);
      assert.deepEqual(new Set(source!.workers), new Set(['w1', 'w2']), 'one subtask on each worker');
      assert.ok(source!.metrics.watermark === null || typeof source!.metrics.watermark === 'number');
      assert.ok(keyed!.metrics.backpressure >= 0 && keyed!.metrics.backpressure <= 1);
      // The keyed edge: every source subtask to every keyed one; the pair on one worker is local.
      assert.deepEqual(job.graph!.edges, [
        { source: source!.id, target: keyed!.id, kind: 'HASH', channels: { local: 2, socket: 2 } },
      ]);
      assert.equal(job.checkpointConfig!.enabled, true);
      assert.equal(job.checkpointConfig!.intervalMs, 200);
      assert.equal(job.checkpointConfig!.retained, 2);
      // The pacing settings travel in the SubmitJob frame; the timeout shown is the effective one.
      assert.equal(job.checkpointConfig!.timeoutMs, 10_000);
      assert.equal(job.checkpointConfig!.minPauseMs, 50);
      assert.equal(job.checkpointConfig!.tolerableFailedCheckpoints, 5);
      assert.equal(job.guarantee.level, 'exactly-once');

      const checkpoints = await until('a completed checkpoint', async () => {
        const c = (
          await h.http<{
            checkpoints: {
              checkpointId: number;
              kind: string;
              durationMs: number;
              stateBytes: number;
              alignmentMs: number;
            }[];
          }>(`/api/v1/jobs/${jobId}/checkpoints`)
        ).body.checkpoints;
        return c.length > 0 ? c : undefined;
      });
      assert.equal(checkpoints[0]!.kind, 'periodic');
      assert.equal(typeof checkpoints[0]!.alignmentMs, 'number');

      const workers = (
        await h.http<{ workers: WorkerView[]; slotsTotal: number; slotsFree: number; departed: unknown[] }>(
          '/api/v1/workers',
        )
      ).body;
      assert.deepEqual(
        workers.workers.map((w) => [w.workerId, w.slotsUsed, w.slotsFree]),
        [
          ['w1', 1, 0],
          ['w2', 1, 0],
        ],
      );
      assert.equal(workers.slotsTotal, 2);
      assert.match(workers.workers[0]!.address, /^127\.0\.0\.1:\d+$/);
      assert.deepEqual(workers.workers.flatMap((w) => w.subtasks).length, 4, 'two subtasks on each worker');
      assert.deepEqual(workers.departed, []);

      // A worker node answers for itself.
      const self = await h.http<{ workerId: string; state: string; coordinator: string; lastError: unknown }>(
        '/api/v1/worker',
        { port: h.worker('w1').httpPort },
      );
      assert.equal(self.status, 200);
      assert.equal(self.body.workerId, 'w1');
      assert.equal(self.body.state, 'connected');
      assert.equal(self.body.coordinator, `127.0.0.1:${h.controlPort}`);

      // Bad requests name what is wrong.
      const noDir = await h.http<{ code: string; message: string }>(`/api/v1/jobs/${jobId}/savepoint`, {
        method: 'POST',
        body: {},
      });
      assert.equal(noDir.status, 400);
      assert.equal(noDir.body.code, 'CLINK_ERR_INVALID_ARGUMENT');
      assert.match(noDir.body.message, /dir/);
      const missing = await h.http<{ code: string; message: string }>('/api/v1/jobs/nope');
      assert.equal(missing.status, 404);
      assert.deepEqual(Object.keys(missing.body).sort(), ['code', 'message']);
      assert.equal(missing.body.code, 'CLINK_ERR_NOT_FOUND');
      assert.equal((await h.http<{ code: string }>('/api/v1/nothing-here')).body.code, 'CLINK_ERR_NOT_FOUND');

      const sp = join(h.dir, 'savepoint');
      const saved = await h.http<{ ok: boolean; path: string }>(`/api/v1/jobs/${jobId}/savepoint`, {
        method: 'POST',
        body: { dir: sp },
      });
      assert.equal(saved.status, 200, saved.text);
      assert.equal(saved.body.path, sp);

      const cancelled = await h.http<{ ok: boolean }>(`/api/v1/jobs/${jobId}/cancel`, { method: 'POST' });
      assert.equal(cancelled.status, 202);
      const ended = await until('the job to end', async () => {
        const v = (await h.http<JobDetail>(`/api/v1/jobs/${jobId}`)).body;
        return v.finishedAt !== undefined ? v : undefined;
      });
      assert.equal(ended.state, 'CANCELED');
      assert.equal(ended.error, 'cancelled over HTTP');
      assert.equal(
        (await h.http(`/api/v1/jobs/${jobId}/cancel`, { method: 'POST' })).status,
        404,
        'an ended job cannot be cancelled',
      );
    } finally {
      await h.close();
    }
  });

  test('the OpenAPI document lists every route with its schemas; a standby answers job routes 503 naming the leader', async () => {
    const metrics = new ClinkMetrics();
    const app = buildHttpApp({
      role: 'coordinator',
      metrics,
      config: {},
      coordinator: () => undefined,
      health: () => ({ ok: false, status: 'standby', leader: { host: '127.0.0.1', port: 7000, epoch: 3 } }),
    });
    try {
      const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
        openapi: string;
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      }>();
      assert.equal(doc.openapi, '3.0.3');
      for (const [path, method] of [
        ['/metrics', 'get'],
        ['/api/v1/health', 'get'],
        ['/api/v1/config', 'get'],
        ['/api/v1/connectors', 'get'],
        ['/api/v1/jobs', 'get'],
        ['/api/v1/jobs', 'post'],
        ['/api/v1/jobs/{id}', 'get'],
        ['/api/v1/jobs/{id}/checkpoints', 'get'],
        ['/api/v1/jobs/{id}/cancel', 'post'],
        ['/api/v1/jobs/{id}/savepoint', 'post'],
        ['/api/v1/workers', 'get'],
      ] as const) {
        const op = doc.paths[path]?.[method];
        assert.ok(op, `${method} ${path} is documented`);
        assert.ok(Object.keys(op.responses).length > 0, `${method} ${path} documents its replies`);
      }
      const standby = await app.inject({ method: 'GET', url: '/api/v1/jobs' });
      assert.equal(standby.statusCode, 503);
      assert.deepEqual(standby.json(), {
        code: 'CLINK_ERR_UNAVAILABLE',
        message: 'this coordinator is a standby: ask the leader',
        status: 'standby',
        leader: { host: '127.0.0.1', port: 7000, epoch: 3 },
      });
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode, 503);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/config' })).statusCode, 200);
    } finally {
      await app.close();
    }
  });

  test('a worker node serves /api/v1/worker (503 before its first session), health, config and metrics, and no job routes', async () => {
    const metrics = new ClinkMetrics();
    let status: ReturnType<NonNullable<Parameters<typeof buildHttpApp>[0]['worker']>>;
    const app = buildHttpApp({ role: 'worker', metrics, config: { slots: 2 }, worker: () => status });
    try {
      const starting = await app.inject({ method: 'GET', url: '/api/v1/worker' });
      assert.equal(starting.statusCode, 503);
      assert.equal(starting.json().code, 'CLINK_ERR_UNAVAILABLE');
      status = {
        workerId: 'w9',
        state: 'reconnecting',
        session: 0,
        epoch: 0,
        coordinator: '',
        dataPort: 0,
        jobDataPorts: [],
        slots: 2,
        lastError: { message: 'cannot register with the coordinator (connect ECONNREFUSED)', at: 1 },
      };
      const reconnecting = await app.inject({ method: 'GET', url: '/api/v1/worker' });
      assert.equal(reconnecting.statusCode, 200);
      assert.deepEqual(reconnecting.json(), status);
      assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/jobs' })).statusCode, 404);
      const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
        paths: Record<string, unknown>;
      }>();
      assert.ok(doc.paths['/api/v1/worker']);
      assert.equal(doc.paths['/api/v1/jobs'], undefined);
    } finally {
      await app.close();
    }
  });
});
