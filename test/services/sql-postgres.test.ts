// SQL updates into the real PostgreSQL `npm run test:services` starts: a GROUP BY without a window
// written INSERT INTO a table with a PRIMARY KEY on the grouped columns is a stream of upserts, so the
// table ends with one row per key holding its final aggregates (read back through SQL too); a key that
// is not the GROUP BY's is refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runJob } from '../../src/index.js';
import { BUILTIN_CAPABILITIES } from '../../src/connectors/index.js';
import { SqlCatalog, SqlError, SqlSession, sqlJobDefinition } from '../../src/sql/index.js';
import { pgUrl, sql, tableName } from '../harness/postgres.js';

describe('SQL updates into PostgreSQL', () => {
  test('a GROUP BY without a window upserts by the primary key: one row per key, its final aggregates', async () => {
    const url = pgUrl();
    const table = tableName('sql_totals');
    await sql(url, `CREATE TABLE ${table} (customer int PRIMARY KEY, orders bigint, total bigint)`);
    const text = `
      CREATE TEMPORARY TABLE orders (id BIGINT, customer INT, amount BIGINT)
        WITH ('connector' = 'datagen', 'number-of-rows' = '3000', 'fields.id.kind' = 'sequence', 'fields.customer.min' = '1', 'fields.customer.max' = '7', 'fields.amount.min' = '1', 'fields.amount.max' = '100');
      CREATE TEMPORARY TABLE totals (customer INT, orders BIGINT, total BIGINT, PRIMARY KEY (customer) NOT ENFORCED)
        WITH ('connector' = 'postgres', 'connection-string' = '${url}', 'table' = '${table}');
      INSERT INTO totals SELECT customer, COUNT(*), SUM(amount) FROM orders GROUP BY customer;`;
    const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
    const job = (await session.execute(text, { parallelism: 2 })).at(-1)!;
    if (job.kind !== 'job') return assert.fail('not a job');
    assert.match(job.job.explain, /Sink\(table=\[totals\], connector=\[postgres\]/);
    await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script), { parallelism: 2 });
    const rows = await sql<{ customer: number; orders: string; total: string }>(
      url,
      `SELECT customer, orders, total FROM ${table} ORDER BY customer`,
    );
    assert.deepEqual(
      rows.map((r) => r.customer),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.equal(
      rows.reduce((n, r) => n + Number(r.orders), 0),
      3000,
      "every order counted once, in its key's last row",
    );
    const expected = await runSelect(
      session,
      'SELECT customer, COUNT(*) AS orders, SUM(amount) AS total FROM orders GROUP BY customer;',
    );
    assert.deepEqual(
      rows.map((r) => ({ customer: r.customer, orders: Number(r.orders), total: Number(r.total) })),
      expected.sort((a, b) => (a.customer as number) - (b.customer as number)),
    );

    // Read back through SQL: a postgres table as a source, its BIGINTs numbers again.
    const back = await runSelect(
      session,
      `CREATE TEMPORARY TABLE totals_in (customer INT, orders BIGINT, total BIGINT) WITH ('connector' = 'postgres', 'connection-string' = '${url}', 'table' = '${table}', 'key-column' = 'customer');
      SELECT customer, orders * 2 AS twice FROM totals_in WHERE total > 0;`,
    );
    assert.deepEqual(
      back.sort((a, b) => (a.customer as number) - (b.customer as number)),
      expected.map((r) => ({ customer: r.customer, twice: (r.orders as number) * 2 })),
    );

    await assert.rejects(
      session.execute(`CREATE TEMPORARY TABLE wrong_key (customer INT, orders BIGINT, PRIMARY KEY (orders) NOT ENFORCED) WITH ('connector' = 'postgres', 'connection-string' = '${url}', 'table' = '${table}');
        INSERT INTO wrong_key SELECT customer, COUNT(*) FROM orders GROUP BY customer;`),
      (err: unknown) =>
        err instanceof SqlError &&
        /PRIMARY KEY \(orders\) must be the columns the results are grouped by \(customer\)/.test(err.detail),
    );
  });
});

async function runSelect(session: SqlSession, text: string): Promise<Record<string, unknown>[]> {
  const job = (await session.execute(text, { parallelism: 2 })).at(-1)!;
  if (job.kind !== 'job') return assert.fail('not a job');
  const r = await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script), { parallelism: 2 });
  return r.collected.result as Record<string, unknown>[];
}
