/**
 * `clink sql` as a person runs it: -e and -f in order, a query run on local workers with its rows as a
 * table, EXPLAIN and --mode explain, --mode compile's module run by clink submit's sibling clink run, a
 * persisted catalog, and a statement with a fault: a one-line message with the caret under it, exit 1.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli, runCliOnTerminal } from '../harness/cli.js';
import { endsStatement } from '../../src/cli/sql.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-sql-cli-'));
  await writeFile(
    join(dir, 'clicks.sql'),
    `-- a generated table: 600 clicks, one every 100 ms, by 3 users
CREATE TEMPORARY TABLE clicks (
  user_id INT,
  url STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '600',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '3',
  'fields.ts.kind' = 'timestamp',
  'fields.ts.start-ms' = '1767225600000',
  'fields.ts.step-ms' = '100'
);
`,
  );
});
after(async () => rm(dir, { recursive: true, force: true }));

const WINDOWED =
  "SELECT window_start, COUNT(*) AS clicks FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end;";

describe('clink sql', () => {
  test('-f then -e: the table is made, the windowed query runs on local workers, its rows print as a table', async () => {
    const r = await runCli(
      ['sql', '-f', 'clicks.sql', '-e', WINDOWED, '-p', '2', '--workers', '1', '--no-progress'],
      dir,
      120_000,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^created temporary table clicks$/m);
    assert.match(r.stdout, /result \(6 rows\)/, r.stdout);
    // 600 clicks 100 ms apart: six windows of 100.
    const counts = r.stdout
      .split('\n')
      .filter((l) => /^\d{4}-\d\d-\d\dT/.test(l))
      .map((l) => l.split('|')[1]!.trim());
    assert.deepEqual(counts, ['100', '100', '100', '100', '100', '100']);
    assert.match(r.stderr, /finished in/);
  });

  test('--mode explain prints the plan and runs nothing; EXPLAIN does the same inline', async () => {
    const r = await runCli(['sql', '-f', 'clicks.sql', '-e', WINDOWED, '--mode', 'explain'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /WindowAggregate\(window=\[TUMBLE\(time=\[ts\], size=\[10000 ms\]\)\]/);
    assert.match(r.stdout, /== Job Graph ==/);
    assert.doesNotMatch(r.stderr, /finished/);
    const inline = await runCli(['sql', '-f', 'clicks.sql', '-e', `EXPLAIN ${WINDOWED}`], dir);
    assert.equal(inline.code, 0, inline.stderr);
    assert.match(
      inline.stdout,
      /TableSourceScan\(table=\[clicks\], connector=\[datagen\], project=\[ts\], watermark=\[ts - 1000 ms\]\)/,
    );
  });

  test('--mode compile prints a job module (and nothing else on standard output) that clink run runs', async () => {
    const c = await runCli(
      ['sql', '-f', 'clicks.sql', '-e', WINDOWED, '--mode', 'compile', '--name', 'clicks-per-window'],
      dir,
    );
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /^\/\/ A clink SQL job[^]*import \{ sqlJob \} from 'clink';/);
    assert.match(c.stderr, /created/, 'the DDL messages go to standard error');
    const module = join(dir, 'clicks-job.js');
    await writeFile(module, c.stdout);
    const r = await runCli(['run', module, '--workers', '0', '--no-progress', '--output', 'json'], dir, 120_000);
    assert.equal(r.code, 0, r.stderr);
    const rows = (JSON.parse(r.stdout) as { result: { clicks: number }[] }).result;
    assert.deepEqual(
      rows.map((x) => x.clicks),
      [100, 100, 100, 100, 100, 100],
    );
    assert.match(r.stderr, /job 'clicks-per-window' finished/);
  });

  test('a fault in a statement: one line naming it with its byte offset, the line and a caret, exit 1', async () => {
    const r = await runCli(['sql', '-f', 'clicks.sql', '-e', 'SELECT user_id, url_ FROM clicks;'], dir);
    assert.equal(r.code, 1);
    const [first, line, caret] = r.stderr.split('\n');
    assert.match(first!, /^error: no column url_; the columns are user_id, url, ts \(at byte \d+\)$/);
    assert.equal(line, 'SELECT user_id, url_ FROM clicks;');
    assert.equal(caret, `${' '.repeat('SELECT user_id, '.length)}^`);
    const missing = await runCli(['sql', '-f', 'nope.sql'], dir);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: cannot read SQL file nope\.sql: ENOENT/);
  });

  test('--sql-catalog-dir keeps permanent tables for the next session; statements also come on standard input', async () => {
    const catalog = join(dir, 'catalog');
    const make = await runCli(
      [
        'sql',
        '--sql-catalog-dir',
        catalog,
        '-e',
        "CREATE TABLE nums (n BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', 'fields.n.kind' = 'sequence');",
      ],
      dir,
    );
    assert.equal(make.code, 0, make.stderr);
    assert.match(await readFile(join(catalog, 'catalog.json'), 'utf8'), /CREATE TABLE nums/);
    const show = await runCli(['sql', '--sql-catalog-dir', catalog, '-e', 'SHOW TABLES; DESCRIBE nums;'], dir);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /nums\s+\| table/);
    assert.match(show.stdout, /n\s+\| BIGINT/);
    const piped = await runCli(
      ['sql', '--sql-catalog-dir', catalog, '--workers', '0', '--no-progress', '--output', 'json'],
      dir,
      60_000,
      {},
      'SELECT n * n AS square FROM nums WHERE n < 4;',
    );
    assert.equal(piped.code, 0, piped.stderr);
    assert.deepEqual(
      (JSON.parse(piped.stdout) as { result: { square: number }[] }).result.map((x) => x.square).sort((a, b) => a - b),
      [0, 1, 4, 9],
    );
  });

  test("the shell on a terminal: a statement over two lines, a query's table, a fault with its caret, history kept; QUIT; leaves", async () => {
    const home = join(dir, 'home');
    await mkdir(home, { recursive: true });
    const typed =
      "CREATE TEMPORARY TABLE n (x BIGINT) WITH ('connector' = 'datagen',\n'number-of-rows' = '3', 'fields.x.kind' = 'sequence');\nSELECT x * 10 AS y FROM n;\nSELECT nope FROM n;\nQUIT;\n";
    // QUIT; leaves (a Ctrl-D typed through script(1)'s piped input arrives only while the terminal is still in line mode).
    const r = await runCliOnTerminal(['sql', '--workers', '0', '--no-progress'], dir, 120_000, {
      text: typed,
      env: { HOME: home },
    });
    const screen = r.stdout.replaceAll('\r', '');
    assert.match(screen, /clink SQL shell: statements end with ';'/);
    assert.match(screen, /-> .*created temporary table n/, 'the first statement took two lines');
    assert.match(screen, /result \(3 rows\)\ny\n-+\n0\n10\n20\n/);
    assert.match(screen, /error: no column nope; the columns are x \(at byte 8\)\nSELECT nope FROM n;\n {7}\^/);
    const history = await readFile(join(home, '.clink_sql_history'), 'utf8');
    assert.match(history, /SELECT x \* 10 AS y FROM n;/);
  });

  test('a statement ends at a semicolon outside quotes and comments', () => {
    assert.equal(endsStatement("SELECT 'a;b' FROM t"), false);
    assert.equal(endsStatement("SELECT 'a;b' FROM t;"), true);
    assert.equal(endsStatement('SELECT 1 -- the end;'), false);
    assert.equal(endsStatement('SELECT 1; -- done'), true);
  });
});
