// The PostgreSQL connector against the real server `npm run test:services` starts (CLINK_TEST_PG), in
// one process: inserts and upserts at both guarantees, the prepared transaction a checkpoint leaves until
// it completes, leftovers of a crashed run rolled back, the source's key-range split, and the errors a bad
// setup gets.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineJob, runJob, startJob } from '../../src/index.js';
import { collect, sortBy } from '../helpers.js';
import { pgUrl, sql, tableName } from '../harness/postgres.js';

describe('postgres connector', () => {
  test('the sink inserts at-least-once and exactly-once; upsert keeps the last row per key', async () => {
    const url = pgUrl();
    for (const delivery of ['at-least-once', 'exactly-once']) {
      const table = tableName('ins');
      await sql(url, `CREATE TABLE ${table} (id int, label text)`);
      await runJob(
        defineJob({ name: 'pg-insert', version: '1' }, (env) => {
          env
            .fromSequence(0, 2_999)
            .map((id) => ({ id, label: `n${id}` }))
            .sinkTo('postgres', { connectionString: url, table, delivery, transactionIdPrefix: table });
        }),
        { parallelism: 2 },
      );
      const rows = await sql<{ n: string; d: string }>(
        url,
        `SELECT count(*) AS n, count(DISTINCT id) AS d FROM ${table}`,
      );
      assert.deepEqual(rows[0], { n: '3000', d: '3000' }, delivery);
    }
    const table = tableName('ups');
    await sql(url, `CREATE TABLE ${table} (k int PRIMARY KEY, v int)`);
    await runJob(
      defineJob({ name: 'pg-upsert', version: '1' }, (env) => {
        env
          .fromSequence(0, 999)
          .map((i) => ({ k: i % 10, v: i }))
          .sinkTo('postgres', { connectionString: url, table, mode: 'upsert', primaryKey: ['k'], batchRows: 64 });
      }),
    );
    const got = await sql<{ k: number; v: number }>(url, `SELECT k, v FROM ${table} ORDER BY k`);
    assert.deepEqual(
      got,
      Array.from({ length: 10 }, (_, k) => ({ k, v: 990 + k })),
    );
  });

  test('exactly-once: a checkpoint prepares the transaction, rows stay invisible until it completes; a crashed run’s prepared transactions are rolled back', async () => {
    const url = pgUrl();
    const table = tableName('tpc');
    await sql(url, `CREATE TABLE ${table} (id int)`);
    // What a crashed earlier run of this sink left: a prepared transaction holding a row.
    await sql(url, `BEGIN; INSERT INTO ${table} VALUES (-1); PREPARE TRANSACTION '${table}-0-77'`);
    const job = startJob(
      defineJob({ name: 'pg-2pc', version: '1' }, (env) => {
        env
          .fromSource('datagen', { count: 1_000_000, rowsPerSecond: 2_000 })
          .sinkTo('postgres', { connectionString: url, table, delivery: 'exactly-once', transactionIdPrefix: table });
      }),
    );
    job.done.catch(() => undefined);
    try {
      while ((await sql(url, `SELECT 1 FROM pg_prepared_xacts WHERE gid = $1`, [`${table}-0-77`])).length > 0)
        await sleep(20);
      const snap = await job.triggerCheckpoint({ commit: false });
      const gid = `${table}-0-${snap.checkpointId}`;
      assert.equal(
        (await sql(url, `SELECT gid FROM pg_prepared_xacts WHERE gid = $1`, [gid])).length,
        1,
        'prepared at the barrier',
      );
      assert.equal(
        (await sql<{ n: string }>(url, `SELECT count(*) AS n FROM ${table}`))[0]!.n,
        '0',
        'nothing visible before the checkpoint completes',
      );
      await job.triggerCheckpoint();
      assert.equal(
        (await sql(url, `SELECT gid FROM pg_prepared_xacts WHERE gid = $1`, [gid])).length,
        0,
        'committed when the checkpoint completed',
      );
      const { n, neg } = (
        await sql<{ n: string; neg: string }>(
          url,
          `SELECT count(*) AS n, count(*) FILTER (WHERE id < 0) AS neg FROM ${table}`,
        )
      )[0]!;
      assert.ok(Number(n) > 0, 'the first checkpoint’s rows are visible');
      assert.equal(neg, '0', 'the crashed run’s row was rolled back');
    } finally {
      job.cancel();
      await job.done.catch(() => undefined);
    }
  });

  test('the source scans a table split by key range over subtasks, every row once; a query too', async () => {
    const url = pgUrl();
    const table = tableName('scan');
    await sql(url, `CREATE TABLE ${table} (id bigint PRIMARY KEY, name text)`);
    await sql(url, `INSERT INTO ${table} SELECT g, 'row' || g FROM generate_series(1, 5000) g`);
    const rows = await collect<{ id: string; name: string }>(
      (env) => env.fromSource('postgres', { connectionString: url, table, fetchRows: 300 }).collect(),
      { parallelism: 3 },
    );
    assert.deepEqual(
      sortBy(
        rows.map((r) => Number(r.id)),
        (x) => x,
      ),
      Array.from({ length: 5000 }, (_, i) => i + 1),
    );
    const odd = await collect<{ id: string }>(
      (env) =>
        env
          .fromSource('postgres', { connectionString: url, query: `SELECT id FROM ${table} WHERE id % 2 = 1` })
          .collect(),
      { parallelism: 2 },
    );
    assert.equal(odd.length, 2500);
  });

  test('bad setups fail naming the fix: a missing table, a missing option, a server that is not there', async () => {
    const url = pgUrl();
    const run = (options: Record<string, unknown>): Promise<unknown> =>
      runJob(
        defineJob({ name: 'pg-bad', version: '1' }, (env) => {
          env
            .fromSequence(0, 9)
            .map((id) => ({ id }))
            .sinkTo('postgres', options);
        }),
      );
    await assert.rejects(
      run({ connectionString: url, table: 'no_such_table_here' }),
      /relation "no_such_table_here" does not exist.*create the table first/,
    );
    await assert.rejects(run({ connectionString: url, table: 't', delivery: 'exactly-once' }), /transactionIdPrefix/);
    await assert.rejects(run({ connectionString: 'postgres://u:secret@127.0.0.1:1/db', table: 't' }), (err: Error) => {
      assert.match(err.message, /cannot connect to PostgreSQL at 127\.0\.0\.1:1\/db/);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    });
  });
});
