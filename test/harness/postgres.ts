// Test helpers for a real PostgreSQL server: the URL npm run test:services passes, and one-off queries.
import assert from 'node:assert/strict';
import pg from 'pg';

export function pgUrl(): string {
  const u = process.env.CLINK_TEST_PG;
  assert.ok(u, 'CLINK_TEST_PG names the PostgreSQL server these tests use: run them with npm run test:services, which starts one');
  return u;
}

let seq = 0;
export function tableName(what: string): string {
  return `${what}_${process.pid}_${Date.now().toString(36)}_${seq++}`;
}

export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, params)).rows;
  } finally {
    await c.end();
  }
}
