/**
 * Golden SQL tests: each test/sql/golden/<name>.sql (after _tables.sql) is planned and run at
 * parallelism 2; its EXPLAIN text must equal <name>.plan and its rows, sorted, <name>.rows.jsonl.
 * The plans are the optimizer's contract (a rule that stops firing shows here); the rows are checked
 * against reference computations in queries.test.ts. `UPDATE_GOLDEN=1` rewrites the expected files.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runSql } from './run-sql.js';

const DIR = new URL('./golden/', import.meta.url).pathname;
const UPDATE = process.env.UPDATE_GOLDEN === '1';

const canonical = (rows: Record<string, unknown>[]): string[] => rows.map((r) => JSON.stringify(r)).sort();

function expect(file: string, actual: string): void {
  const path = join(DIR, file);
  if (UPDATE) writeFileSync(path, actual);
  assert.equal(actual, readFileSync(path, 'utf8'), `${file} (UPDATE_GOLDEN=1 rewrites it after a deliberate change)`);
}

describe('golden SQL: plans and results', () => {
  const tables = readFileSync(join(DIR, '_tables.sql'), 'utf8');
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith('.sql') && !f.startsWith('_'))
    .sort()) {
    const name = file.slice(0, -4);
    test(name, async () => {
      const { plan, rows } = await runSql(tables + readFileSync(join(DIR, file), 'utf8'));
      expect(`${name}.plan`, plan + '\n');
      assert.ok(rows.length > 0, 'a golden query returns rows');
      expect(`${name}.rows.jsonl`, canonical(rows).join('\n') + '\n');
    });
  }
});
