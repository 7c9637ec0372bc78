// The session catalog: CREATE checks what it can at once, the other catalog statements answer, and a
// catalog directory keeps the permanent objects across a restart (written durably, never half-changed).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isCatalogStatement, SqlCatalog } from '../../src/sql/catalog.js';
import { parseSql, SqlError } from '../../src/sql/index.js';

const CONNECTORS = ['datagen', 'nexmark', 'print', 'blackhole'];

async function run(c: SqlCatalog, sql: string): Promise<{ message: string; rows?: Record<string, unknown>[] }> {
  const [s] = parseSql(sql);
  assert.ok(s && isCatalogStatement(s), sql);
  return c.execute(s);
}

async function refusal(c: SqlCatalog, sql: string): Promise<SqlError> {
  try {
    await run(c, sql);
  } catch (err) {
    assert.ok(err instanceof SqlError, String(err));
    return err;
  }
  assert.fail(`accepted: ${sql}`);
}

let dir: string;
before(async () => (dir = await mkdtemp(join(tmpdir(), 'clink-catalog-'))));
after(async () => rm(dir, { recursive: true, force: true }));

describe('SQL session catalog', () => {
  test('CREATE TABLE is checked: a known connector, unique columns, a watermark on a time column, key columns that exist', async () => {
    const c = await SqlCatalog.open(CONNECTORS);
    assert.match(
      (await refusal(c, 'CREATE TABLE t (a INT)')).detail,
      /^table t names no connector: add WITH \('connector' = '\.\.\.'\), one of blackhole, datagen, nexmark, print$/,
    );
    assert.match(
      (await refusal(c, "CREATE TABLE t (a INT) WITH ('connector' = 'kafkaa')")).detail,
      /names connector 'kafkaa', which this build does not have; it has blackhole, datagen/,
    );
    const twice = await refusal(c, "CREATE TABLE t (a INT, a BIGINT) WITH ('connector' = 'datagen')");
    assert.equal(twice.detail, 'column a is defined twice in table t');
    assert.equal(twice.offset, 23, 'the offset is the second definition');
    assert.match(
      (await refusal(c, "CREATE TABLE t (a INT, WATERMARK FOR a AS a) WITH ('connector' = 'datagen')")).detail,
      /the column is INT; a watermark needs a TIMESTAMP\(3\) or TIMESTAMP_LTZ\(3\) column/,
    );
    assert.match(
      (await refusal(c, "CREATE TABLE t (a INT, PRIMARY KEY (b) NOT ENFORCED) WITH ('connector' = 'datagen')")).detail,
      /PRIMARY KEY \(b\): table t has no such column/,
    );
    assert.deepEqual(c.list(), []);
  });

  test('SHOW TABLES, DESCRIBE, DROP, ALTER TABLE ... RENAME, and temporary objects shadowing permanent ones', async () => {
    const c = await SqlCatalog.open(CONNECTORS);
    await run(
      c,
      "CREATE TABLE bids (auction BIGINT NOT NULL, price BIGINT, ts TIMESTAMP(3), doubled AS price * 2, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (auction) NOT ENFORCED) WITH ('connector' = 'nexmark')",
    );
    await run(c, 'CREATE VIEW big AS SELECT auction FROM bids WHERE price > 100');
    assert.match(
      (await refusal(c, "CREATE TABLE bids (a INT) WITH ('connector' = 'datagen')")).detail,
      /^table named bids already exists \(DROP it first, or CREATE \.\.\. IF NOT EXISTS\)$/,
    );
    assert.equal(
      (await run(c, "CREATE TABLE IF NOT EXISTS bids (a INT) WITH ('connector' = 'datagen')")).message,
      'bids already exists; left as it is',
    );
    assert.deepEqual((await run(c, 'SHOW TABLES')).rows, [
      { name: 'bids', kind: 'table', temporary: false },
      { name: 'big', kind: 'view', temporary: false },
    ]);
    assert.deepEqual((await run(c, 'DESCRIBE bids')).rows, [
      { name: 'auction', type: 'BIGINT', null: false, key: true, extras: '' },
      { name: 'price', type: 'BIGINT', null: true, key: false, extras: '' },
      { name: 'ts', type: 'TIMESTAMP(3)', null: true, key: false, extras: "WATERMARK AS (ts - INTERVAL '5' SECOND)" },
      { name: 'doubled', type: 'computed', null: true, key: false, extras: 'AS (price * 2)' },
    ]);
    await run(c, "CREATE TEMPORARY TABLE bids (x INT) WITH ('connector' = 'datagen')");
    assert.equal(c.get('bids')?.temporary, true, 'the temporary table shadows the permanent one');
    await run(c, 'DROP TEMPORARY TABLE bids');
    assert.equal(c.get('bids')?.temporary, false);
    assert.match((await refusal(c, 'DROP TABLE big')).detail, /^big is a view: use DROP VIEW$/);
    await run(c, 'ALTER TABLE bids RENAME TO bids2');
    assert.deepEqual(
      c.list().map((o) => o.name),
      ['bids2', 'big'],
    );
    assert.equal((await run(c, 'DROP VIEW IF EXISTS nothing')).message, 'nothing does not exist; nothing dropped');
    assert.match(
      (await refusal(c, 'DESCRIBE nothing')).detail,
      /^no table or view named nothing \(SHOW TABLES lists them\)$/,
    );
  });

  test('with a directory, permanent objects survive a reopen and temporary ones do not; a failed write changes nothing', async () => {
    const at = join(dir, 'persist');
    await mkdir(at);
    const c = await SqlCatalog.open(CONNECTORS, at);
    await run(
      c,
      "CREATE TABLE src (a INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', 'rowsPerSecond' = '10')",
    );
    await run(c, "CREATE TEMPORARY TABLE tmp (a INT) WITH ('connector' = 'print')");
    const saved = JSON.parse(await readFile(join(at, 'catalog.json'), 'utf8')) as {
      version: number;
      objects: string[];
    };
    assert.deepEqual(saved, {
      version: 1,
      objects: [
        "CREATE TABLE src (a INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', 'rowsPerSecond' = '10')",
      ],
    });
    const again = await SqlCatalog.open(CONNECTORS, at);
    assert.deepEqual(
      again.list().map((o) => [o.name, o.kind, o.temporary]),
      [['src', 'table', false]],
    );
    // A write that fails (a directory where its temp file goes, which even root cannot open as a file):
    // the statement fails with the storage error, and the catalog, in memory and on disk, is as it was.
    const blocker = join(at, `catalog.json.${process.pid}.tmp`);
    await mkdir(blocker);
    await assert.rejects(
      run(again, "CREATE TABLE more (a INT) WITH ('connector' = 'print')"),
      /could not write catalog\.json durably/,
    );
    await rmdir(blocker);
    assert.deepEqual(
      again.list().map((o) => o.name),
      ['src'],
    );
    assert.deepEqual(
      (await SqlCatalog.open(CONNECTORS, at)).list().map((o) => o.name),
      ['src'],
    );
  });
});
