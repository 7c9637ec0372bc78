// A short outage of an external system while a job writes to it: the connector rides it out itself
// (reconnecting and retrying for reconnectTimeoutMs, 30 s by default) instead of failing its subtask, so
// the job spends no restart, and what it writes is still exact. Before, every failed call restarted
// the whole job (a 22 s broker outage spent 6 of 10 restarts).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { startPipe, type Pipe } from '../harness/chaos-job.js';
import { createStream, readStream, streamName } from '../harness/nats.js';
import { PG_SINK_JOB, sql, tableName } from '../harness/postgres.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startNats } from '../../scripts/nats.mjs';
// @ts-expect-error: a plain ES module shared with the service runner
import { startPostgres } from '../../scripts/postgres.mjs';

const OUTAGE_MS = 5_000;

test(
  `a NATS server down for ${OUTAGE_MS / 1000} s: the job rides it out without a restart, every id once`,
  { timeout: 180_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-nats-outage-'));
    const server = (await startNats(join(dir, 'nats'), () => undefined)) as {
      url: string;
      restart(hard: boolean, downMs: number): Promise<void>;
      stop(): Promise<void>;
    };
    let pipe: Pipe | undefined;
    try {
      const stream = streamName('outage');
      await createStream(server.url, stream);
      pipe = await startPipe(resolve(import.meta.dirname, '../fixtures/jobs/nats-sink.ts'), {
        server: server.url,
        subject: `${stream}.out`,
        prefix: stream,
        count: '16000',
        rate: '2000',
      });
      await pipe.checkpoints(2);
      await server.restart(true, OUTAGE_MS);
      const done = await pipe.client.waitForCompletion(pipe.jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual((await pipe.view()).restarts, [], 'no restart spent');
      const ids = (await readStream(server.url, stream))
        .map((m) => (m.value as { id: number }).id)
        .sort((a, b) => a - b);
      assert.deepEqual(
        ids,
        Array.from({ length: 16_000 }, (_, i) => i),
        'each id exactly once',
      );
    } finally {
      await pipe?.h.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test(
  'a PostgreSQL restart under an at-least-once upsert sink: it reconnects and writes the batch again, without a restart; every row there',
  { timeout: 180_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-pg-outage-'));
    const server = (await startPostgres(join(dir, 'pg'), () => undefined)) as {
      url: string;
      restart(hard: boolean, downMs: number): Promise<void>;
      stop(): Promise<void>;
    };
    let pipe: Pipe | undefined;
    try {
      const table = tableName('outage');
      await sql(server.url, `CREATE TABLE ${table} (id int PRIMARY KEY, v int)`);
      pipe = await startPipe(PG_SINK_JOB, {
        url: server.url,
        table,
        prefix: table,
        count: '12000',
        rate: '1500',
        delivery: 'upsert',
      });
      await pipe.checkpoints(2);
      await server.restart(false, OUTAGE_MS);
      const done = await pipe.client.waitForCompletion(pipe.jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual((await pipe.view()).restarts, [], 'no restart spent');
      const [r] = await sql<{ n: string; lo: number; hi: number }>(
        server.url,
        `SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM ${table}`,
      );
      assert.deepEqual(r, { n: '12000', lo: 0, hi: 11_999 }, 'every id, once (upserted)');
    } finally {
      await pipe?.h.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
