// Generated rows into PostgreSQL exactly once (two-phase commit) on a real cluster: kill -9 of a worker
// three times at random moments (a seeded schedule), and a crash-restart of the database in the middle
// of a transaction. The table must hold every id exactly once and no prepared transaction may be left.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { chaosSeed, killWorkersAtRandom, prng, startPipe, type Pipe } from '../harness/chaos-job.js';
import { pgUrl, sql, tableName } from '../harness/postgres.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startPostgres } from '../../scripts/postgres.mjs';

const JOB = resolve(import.meta.dirname, '../fixtures/jobs/pg-sink.ts');
const SEED = chaosSeed();

/** Wait until the job finished; then every id once, nothing left prepared. */
async function assertExactlyOnce(pipe: Pipe, url: string, table: string, n: number, what: string): Promise<void> {
  const done = await pipe.client.waitForCompletion(pipe.jobId);
  assert.equal(done.ok, true, `${what}: ${done.error}`);
  const [r] = await sql<{ n: string; d: string; lo: number; hi: number }>(url, `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ${table}`);
  assert.deepEqual(r, { n: String(n), d: String(n), lo: 0, hi: n - 1 }, `${what}: each id exactly once`);
  assert.deepEqual(await sql(url, `SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1`, [`${table}-%`]), [], `${what}: no prepared transaction left`);
}

test(`postgres exactly once: kill -9 of a worker three times at random moments (seed ${SEED})`, { timeout: 180_000 }, async (t) => {
  const url = pgUrl();
  const random = prng(SEED);
  const table = tableName('eo');
  await sql(url, `CREATE TABLE ${table} (id int, v int)`);
  const pipe = await startPipe(JOB, { url, table, prefix: table, count: '12000', rate: '2000' });
  try {
    const log = await killWorkersAtRandom(pipe, random, 3);
    await assertExactlyOnce(pipe, url, table, 12_000, `seed ${SEED} (${log.join('; ')})`);
    t.diagnostic(log.join('; '));
  } finally {
    await pipe.h.close();
  }
});

test('postgres exactly once across a crash-restart of the database in the middle of a transaction', { timeout: 180_000 }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clink-pg-restart-'));
  const server = (await startPostgres(join(dir, 'pg'), () => undefined)) as { url: string; restart(hard: boolean): Promise<void>; stop(): Promise<void> };
  let pipe: Pipe | undefined;
  try {
    const table = tableName('restart');
    await sql(server.url, `CREATE TABLE ${table} (id int, v int)`);
    pipe = await startPipe(JOB, { url: server.url, table, prefix: table, count: '8000', rate: '1500' });
    await pipe.checkpointAfter(await pipe.checkpointAfter(0));
    await server.restart(true);
    await assertExactlyOnce(pipe, server.url, table, 8_000, 'database restart');
  } finally {
    await pipe?.h.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
