// Test helpers for a real PostgreSQL server: the URL npm run test:services passes, and one-off queries.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import pg from 'pg';
import type { Pipe } from './chaos-job.js';

export function pgUrl(): string {
  const u = process.env.CLINK_TEST_PG;
  assert.ok(
    u,
    'CLINK_TEST_PG names the PostgreSQL server these tests use: run them with npm run test:services, which starts one',
  );
  return u;
}

let seq = 0;
export function tableName(what: string): string {
  return `${what}_${process.pid}_${Date.now().toString(36)}_${seq++}`;
}

export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  text: string,
  params: unknown[] = [],
): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end();
  }
}

/** Generated rows into PostgreSQL, exactly once (test/fixtures/jobs/pg-sink.ts). */
export const PG_SINK_JOB = resolve(import.meta.dirname, '../fixtures/jobs/pg-sink.ts');

/** Wait until the job finished; then every id once, nothing left prepared. */
export async function assertPgExactlyOnce(
  pipe: Pipe,
  url: string,
  table: string,
  n: number,
  what: string,
): Promise<void> {
  const done = await pipe.client.waitForCompletion(pipe.jobId);
  assert.equal(done.ok, true, `${what}: ${done.error}`);
  const [r] = await sql<{ n: string; d: string; lo: number; hi: number }>(
    url,
    `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ${table}`,
  );
  assert.deepEqual(r, { n: String(n), d: String(n), lo: 0, hi: n - 1 }, `${what}: each id exactly once`);
  assert.deepEqual(
    await sql(url, `SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1`, [`${table}-%`]),
    [],
    `${what}: no prepared transaction left`,
  );
}
