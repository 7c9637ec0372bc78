// Token auth (CLINK_AUTH_TOKEN) against a real coordinator, its HTTP API, real workers and clients: every
// HTTP request, client session and worker registration without the token (or with a wrong one) is refused
// and counted; the attacks of issue 17 that need only the control port are replayed and refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClusterClient } from '../../src/client/index.js';
import { Coordinator } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { Worker, type WorkerConfig } from '../../src/worker/index.js';

const TOKEN = 'correct horse battery staple';

const workerConfig = (port: number, id: string): WorkerConfig => ({
  id,
  coordinatorHost: '127.0.0.1',
  coordinatorPort: port,
  slots: 1,
  dataHost: '127.0.0.1',
  heartbeatIntervalMs: 200,
  peerUpdateTimeoutMs: 30_000,
  batchSize: 1_000,
  batchLingerMs: 0,
  taskIsolation: 'none',
});

async function cluster() {
  const { log, lines } = memoryLogger();
  const metrics = new ClinkMetrics();
  const coordinator = await Coordinator.start({ port: 0 }, { log, metrics, authToken: TOKEN });
  const app = buildHttpApp({
    role: 'coordinator',
    metrics,
    config: coordinator.config as unknown as Record<string, unknown>,
    coordinator,
    authToken: TOKEN,
  });
  return { coordinator, app, metrics, lines, close: async () => (await app.close(), await coordinator.stop()) };
}

describe('token auth', () => {
  test('every HTTP request needs the bearer token (401 before any handler, a 404 too); a CORS preflight does not; the config never shows it', async () => {
    const c = await cluster();
    try {
      for (const [url, authorization] of [
        ['/api/v1/jobs', undefined],
        ['/api/v1/jobs', 'Bearer wrong'],
        ['/metrics', `Basic ${TOKEN}`],
        ['/api/v1/no/such/route', undefined],
      ] as const) {
        const res = await c.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
        assert.equal(res.statusCode, 401, `${url} ${authorization}`);
        assert.equal(res.json().code, 'CLINK_ERR_UNAUTHORIZED');
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="clink"');
      }
      const ok = await c.app.inject({
        method: 'GET',
        url: '/api/v1/jobs',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(ok.statusCode, 200);
      const preflight = await c.app.inject({ method: 'OPTIONS', url: '/api/v1/jobs' });
      assert.notEqual(preflight.statusCode, 401);
      const config = await c.app.inject({
        method: 'GET',
        url: '/api/v1/config',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.doesNotMatch(config.body, new RegExp(TOKEN));
    } finally {
      await c.close();
    }
  });

  test('a client without the token (or with a wrong one) cannot submit, list or cancel: its session is refused, counted and logged', async () => {
    const c = await cluster();
    try {
      for (const authToken of ['', 'wrong']) {
        await assert.rejects(
          (async () => {
            const client = await ClusterClient.connect('127.0.0.1', c.coordinator.port, { authToken });
            try {
              await client.listJobs();
            } finally {
              client.close();
            }
          })(),
          (err: Error & { code?: string }) =>
            err.code === 'CLINK_ERR_UNAUTHORIZED' &&
            err.message ===
              `the coordinator refused this client: authentication failed: this coordinator requires the cluster's token and the client's is ${authToken ? 'wrong' : 'missing'}; set CLINK_AUTH_TOKEN to it`,
        );
      }
      assert.equal(await c.metrics.value('clink_coordinator_auth_refusals_total', { role: 'client' }), 2);
      const client = await ClusterClient.connect('127.0.0.1', c.coordinator.port, { authToken: TOKEN });
      assert.deepEqual(await client.listJobs(), []);
      client.close();
    } finally {
      await c.close();
    }
  });

  test('a Register without the token is refused for good, so it cannot displace a registered worker under its id', async () => {
    const c = await cluster();
    const { log } = memoryLogger();
    const honest = await Worker.start(workerConfig(c.coordinator.port, 'w1'), {
      log,
      metrics: new ClinkMetrics(),
      authToken: TOKEN,
    });
    try {
      await assert.rejects(
        Worker.start(workerConfig(c.coordinator.port, 'w1'), { log, metrics: new ClinkMetrics() }),
        (err: Error & { retryable?: boolean }) => {
          assert.equal(
            err.message,
            "the coordinator refused the registration: authentication failed: this coordinator requires the cluster's token and the worker's is missing; set CLINK_AUTH_TOKEN to it",
          );
          assert.equal(err.retryable, false);
          return true;
        },
      );
      assert.equal(await c.metrics.value('clink_coordinator_auth_refusals_total', { role: 'worker' }), 1);
      assert.deepEqual(
        c.coordinator.workers().map((w) => [w.workerId, w.session]),
        [['w1', honest.session]],
        'the honest session is untouched',
      );
    } finally {
      await honest.close();
      await c.close();
    }
  });
});
