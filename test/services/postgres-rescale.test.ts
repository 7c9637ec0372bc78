// Generated rows into PostgreSQL exactly once across rescales 2 -> 3 -> 1 mid-stream: each sink subtask
// that goes away hands its prepared transactions to the one that takes it over, which commits those its
// checkpoint recorded and rolls back the rest. Every id exactly once, and no prepared transaction left.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rescaleInTurn, startPipe } from '../harness/chaos-job.js';
import { assertPgExactlyOnce, PG_SINK_JOB, pgUrl, sql, tableName } from '../harness/postgres.js';

test('postgres exactly once across rescales 2 -> 3 -> 1 mid-stream', { timeout: 180_000 }, async () => {
  const url = pgUrl();
  const table = tableName('rs');
  await sql(url, `CREATE TABLE ${table} (id int, v int)`);
  const pipe = await startPipe(PG_SINK_JOB, { url, table, prefix: table, count: '30000', rate: '1500' });
  try {
    await rescaleInTurn(pipe, [3, 1]);
    const view = await pipe.view();
    assert.ok(view.state === 'RUNNING' || view.state === 'FINISHED');
    await assertPgExactlyOnce(pipe, url, table, 30_000, 'rescaled 2 -> 3 -> 1');
  } finally {
    await pipe.h.close();
  }
});
