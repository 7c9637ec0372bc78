// SQL over HTTP: statements posted to a real cluster's coordinator make tables in its catalog and run
// queries as jobs; the catalog outlives the coordinator in --sql-catalog-dir; explain and compile
// answer without running; a fault answers 400 with its message, 1-based byte position and excerpt.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Coordinator, type JobDetail } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { ClusterHarness } from '../harness/cluster.js';

const CLICKS = `CREATE TABLE clicks (user_id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'datagen', 'number-of-rows' = '600', 'fields.user_id.min' = '1', 'fields.user_id.max' = '3',
      'fields.ts.kind' = 'timestamp', 'fields.ts.start-ms' = '1767225600000', 'fields.ts.step-ms' = '100');`;
const PER_USER =
  "SELECT user_id, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY user_id, window_start, window_end";

interface SqlReply {
  ok: boolean;
  results: ({ kind: string; statement: string } & Record<string, unknown>)[];
  code?: string;
  message?: string;
  error?: string;
  position?: number;
  excerpt?: string;
}

describe('SQL over HTTP', () => {
  test('the first SQL request loads and plans off the event loop: a worker with a 1 s coordinator timeout keeps its session through it', async () => {
    // Before, the SQL planner loaded on the coordinator's loop (3.4 s here): the worker heard nothing for
    // longer than its timeout, ended its session and registered again (with a job running, a restart).
    const h = await ClusterHarness.start({
      workers: 1,
      slots: 1,
      workerArgs: ['--coordinator-heartbeat-timeout-ms=1000'],
    });
    try {
      const res = await fetch(`http://127.0.0.1:${h.httpPort}/api/v1/jobs/sql?mode=explain`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: `${CLICKS} ${PER_USER}`,
      });
      assert.equal(res.status, 200, await res.text());
      const workers = (await h.http<{ workers: { workerId: string; session: number }[] }>('/api/v1/workers')).body
        .workers;
      assert.deepEqual(
        workers.map((w) => w.session),
        [1],
        'the same session',
      );
      assert.ok(
        !h.nodes.some((n) => n.logs.some((l) => /no frame from the coordinator/.test(String(l.msg)))),
        'no worker lost its coordinator',
      );
    } finally {
      await h.close();
    }
  });

  test('a table made by one request, a windowed query submitted by the next runs to its end on the cluster', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 2 });
    try {
      const post = async (sql: string, query = ''): Promise<{ status: number; body: SqlReply }> => {
        const res = await fetch(`http://127.0.0.1:${h.httpPort}/api/v1/jobs/sql${query}`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: sql,
        });
        return { status: res.status, body: (await res.json()) as SqlReply };
      };
      const made = await post(CLICKS);
      assert.equal(made.status, 200, JSON.stringify(made.body));
      assert.deepEqual(
        made.body.results.map((r) => r.message),
        ['created table clicks'],
      );
      // A SET in the request gives its job checkpoint settings, by Flink's key.
      const submitted = await post(
        `SET 'execution.checkpointing.timeout' = '45 s';\n${PER_USER}`,
        '?parallelism=2&name=clicks-per-user',
      );
      assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
      assert.equal(submitted.body.results[0]!.message, "'execution.checkpointing.timeout' is set to '45 s'");
      const job = submitted.body.results[1]!;
      assert.equal(job.kind, 'job');
      assert.equal(job.name, 'clicks-per-user');
      let detail: JobDetail;
      for (;;) {
        detail = (await h.http<JobDetail>(`/api/v1/jobs/${String(job.jobId)}`)).body;
        if (detail.finishedAt !== undefined) break;
        await sleep(50);
      }
      assert.equal(detail.state, 'FINISHED', detail.error);
      assert.equal(detail.parallelism, 2);
      assert.equal(detail.checkpointConfig!.timeoutMs, 45_000);
      assert.equal(detail.sourceRecords, 600);
      // 60 seconds of clicks: 6 windows, each with every one of the 3 users (100 clicks a window).
      assert.equal(detail.sinkRecords, 18);
      const catalog = await h.http<{ objects: { name: string; kind: string }[] }>('/api/v1/catalog');
      assert.deepEqual(
        catalog.body.objects.map((o) => [o.name, o.kind]),
        [['clicks', 'table']],
      );
    } finally {
      await h.close();
    }
  });

  test('explain and compile run nothing; the catalog outlives the coordinator in --sql-catalog-dir; faults are 400s with a position', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-http-sql-'));
    const { log } = memoryLogger();
    const start = async (): Promise<{
      close: () => Promise<void>;
      post: (sql: string, query?: string) => Promise<{ status: number; body: SqlReply }>;
      get: <T>(url: string) => Promise<T>;
    }> => {
      const metrics = new ClinkMetrics();
      const coordinator = await Coordinator.start({ port: 0 }, { log, metrics });
      const app = buildHttpApp({
        role: 'coordinator',
        metrics,
        config: {},
        coordinator,
        sqlCatalogDir: join(dir, 'catalog'),
      });
      return {
        post: async (sql, query = '') => {
          const res = await app.inject({
            method: 'POST',
            url: `/api/v1/jobs/sql${query}`,
            headers: { 'content-type': 'application/sql' },
            payload: sql,
          });
          return { status: res.statusCode, body: res.json<SqlReply>() };
        },
        get: async <T>(url: string) => (await app.inject({ method: 'GET', url })).json<T>(),
        close: async () => {
          await app.close();
          await coordinator.stop();
        },
      };
    };
    try {
      const first = await start();
      assert.equal((await first.post(CLICKS)).status, 200);
      const explained = await first.post(PER_USER, '?mode=explain&parallelism=2');
      assert.equal(explained.status, 200);
      assert.equal(explained.body.results[0]!.kind, 'explain');
      assert.match(
        String(explained.body.results[0]!.plan),
        /WindowAggregate\(window=\[TUMBLE\(time=\[ts\], size=\[10000 ms\]\)\], groupBy=\[user_id, window_start, window_end\]/,
      );
      assert.match(String(explained.body.results[0]!.plan), /\[window, parallelism 2\]/);
      const compiled = await first.post(PER_USER, '?mode=compile');
      assert.equal(compiled.status, 200);
      assert.match(String(compiled.body.results[0]!.module), /export default await sqlJob\(/);
      assert.deepEqual((await first.get<{ jobs: unknown[] }>('/api/v1/jobs')).jobs, [], 'nothing ran');
      await first.close();

      const second = await start();
      const catalog = await second.get<{ objects: { name: string; sql: string }[] }>('/api/v1/catalog');
      assert.deepEqual(
        catalog.objects.map((o) => o.name),
        ['clicks'],
      );
      const text = 'SELECT user_id, nope FROM clicks';
      const bad = await second.post(text);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.ok, false);
      assert.equal(bad.body.code, 'CLINK_ERR_PLAN');
      assert.match(bad.body.error!, /^no column nope; the columns are user_id, ts$/);
      assert.equal(bad.body.position, text.indexOf('nope') + 1);
      assert.equal(bad.body.excerpt, `${text}\n${' '.repeat(text.indexOf('nope'))}^`);
      const badSet = await second.post(`SHOW TABLES; SET 'execution.checkpointing.timeout' = 'soon'`);
      assert.equal(badSet.status, 400);
      assert.match(badSet.body.error!, /^setting execution.checkpointing.timeout: expected a duration/);
      assert.equal(badSet.body.position, 'SHOW TABLES; '.length + 1);
      const syntax = await second.post('SELEC 1');
      assert.equal(syntax.status, 400);
      assert.equal(syntax.body.position, 1);
      assert.equal((await second.post(PER_USER, '?mode=run')).status, 400);
      assert.equal((await second.post(' ')).status, 400);
      assert.equal((await second.post(PER_USER, '?parallelism=zero')).body.code, 'CLINK_ERR_INVALID_ARGUMENT');
      const deep = await second.post(`SELECT ${'('.repeat(2000)}user_id${')'.repeat(2000)} FROM clicks`);
      assert.equal(deep.status, 400, 'a statement nested past the planner is refused, not a crash');
      assert.match(deep.body.error!, /nests too deeply/);
      const huge = await second.post(`SELECT ${'user_id, '.repeat(9000)}user_id FROM clicks`);
      assert.equal(huge.status, 413, 'a statement over 64 KiB is refused before it is planned');
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
