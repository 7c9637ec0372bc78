// The first hour's traps, each closed: one test per promise of a CLI that never misleads (the exact
// message and exit code), against real processes and sockets.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BIN, runCli, TSX, useJobDir } from '../harness/cli.js';
import { FIRST_HOUR_JOBS } from '../harness/cli-jobs.js';
import { heldPort, helpLine, waitFor } from '../helpers.js';
import { formatTable } from '../../src/cli/table.js';

const clink = runCli;
/** The jobs' directory, made before the tests and removed after them. */
const dir = useJobDir('clink-first-hour-', FIRST_HOUR_JOBS);

describe('the command line, without a cluster', () => {
  test('a usage error is one line and a pointer to --help, never the whole help (exit 2)', async () => {
    const r = await clink(['run', 'rate.ts', '--paralelism', '3'], dir());
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      "error: unknown option '--paralelism'\n(Did you mean --parallelism?)\n(add --help for usage)\n",
    );
  });

  test('a bad option value names the operator, the option, the value given and what is expected (exit 1)', async () => {
    const nan = await clink(['run', 'rate.ts', '--workers', '0', '--param', 'rate=abc'], dir());
    assert.equal(nan.code, 1);
    assert.equal(
      nan.stderr,
      "error: operator '_inline_source_0': datagen: invalid options: option rowsPerSecond: expected a finite number, got NaN (a --param that is not a number?)\n",
    );
    const negative = await clink(['run', 'rate.ts', '--workers', '0', '--no-progress', '--param', 'rate=-3'], dir());
    assert.equal(negative.code, 1);
    // Checked when the job is built, before anything runs.
    assert.equal(
      negative.stderr,
      "error: operator '_inline_source_0': datagen: invalid options: option rowsPerSecond: expected > 0, got -3\n",
    );
  });

  test('--max-rows 0 prints every row; tables are sorted and show event times as ISO times (JSON keeps them raw)', async () => {
    const r = await clink(['run', 'windows.ts', '--workers', '0', '--no-progress', '--max-rows', '0'], dir());
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').filter((l) => /^\d+\s+\|/.test(l));
    assert.equal(rows.length, 50);
    assert.match(rows[0]!, /^0\s+\| 2026-01-01T00:00:00\.000Z \| 2026-01-01T00:01:00\.000Z \| 1$/);
    assert.match(rows[1]!, /^0\s+\| 2026-01-01T00:01:00\.000Z \| 2026-01-01T00:02:00\.000Z \| 1$/);
    const keys = rows.map((l) => Number(l.split('|')[0]));
    assert.deepEqual(
      keys,
      [...keys].sort((a, b) => a - b),
    );
    assert.doesNotMatch(r.stdout, /more row/);
    const cut = await clink(['run', 'windows.ts', '--workers', '0', '--no-progress'], dir());
    assert.match(cut.stdout, /\.\.\. 30 more row\(s\) \(--max-rows 0 prints all\)/);
    const json = await clink(['run', 'windows.ts', '--workers', '0', '--output', 'json'], dir());
    const parsed = JSON.parse(json.stdout) as { 'per minute': { start: number }[] };
    assert.equal(typeof parsed['per minute'][0]!.start, 'number');
  });

  test('formatTable: time columns by name only, counts untouched, a value column for scalars', () => {
    const t = formatTable(
      [
        { key: 2, start: 1_767_225_600_000, count: 1_767_225_600_000 },
        { key: 1, start: 0, count: 3 },
      ],
      0,
    );
    assert.equal(t.split('\n')[0], 'key | start                    | count');
    assert.match(t, /^1\s+\| 0\s+\| 3$/m);
    assert.match(t, /^2\s+\| 2026-01-01T00:00:00\.000Z \| 1767225600000$/m);
    assert.match(formatTable(['b', 'a'], 0), /value\n-+\na\nb/);
  });

  test('clink run type-checks the job first and reports file:line (exit 1); --no-typecheck runs it anyway', async () => {
    const r = await clink(['run', 'mistyped.ts', '--workers', '0'], dir());
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "error: job module mistyped.ts does not type-check (--no-typecheck runs it anyway):\nmistyped.ts:4:43: error TS2339: Property 'toUpperCase' does not exist on type 'number'.\n",
    );
    const anyway = await clink(['run', 'mistyped.ts', '--workers', '0', '--no-typecheck'], dir());
    assert.equal(anyway.code, 1);
    assert.match(
      anyway.stderr,
      /^error: job failed: operator '_inline_map_0' \(map, subtask 1\/1\) failed: TypeError: x\.toUpperCase is not a function$/m,
    );
  });

  test('a port in use is a user error naming the flag (exit 1, one line), never an internal error', async () => {
    const held = await heldPort();
    try {
      const control = await clink(['node', '--role=coordinator', `--port=${held.port}`], dir());
      assert.equal(control.code, 1);
      assert.equal(
        control.stderr,
        `error: cannot listen on 127.0.0.1:${held.port}: the port is in use (--port); stop what holds it or choose another port (0 picks a free one)\n`,
      );
      const http = await clink(['node', '--role=coordinator', '--port=0', `--http-port=${held.port}`], dir(), 60_000, {
        CLINK_LOG_LEVEL: 'error',
      });
      assert.equal(http.code, 1);
      assert.equal(
        http.stderr,
        `error: cannot listen on 127.0.0.1:${held.port}: the port is in use (--http-port); stop what holds it or choose another port (0 picks a free one)\n`,
      );
    } finally {
      await held.close();
    }
    const ready = await clink(
      ['node', '--role=coordinator', '--port=0', '--ready-file=/nonexistent-dir/ready.json'],
      dir(),
      60_000,
      { CLINK_LOG_LEVEL: 'error' },
    );
    assert.equal(ready.code, 1);
    assert.match(
      ready.stderr,
      /^error: cannot write the ready file \/nonexistent-dir\/ready\.json \(--ready-file\): ENOENT: no such file or directory/,
    );
  });

  test('--log-format pretty|json and --log-level choose how a node logs (JSON lines when not on a terminal)', async () => {
    let n = 0;
    const lines = async (flags: string[]): Promise<string[]> => {
      const ready = join(dir(), `log-format-${++n}.json`);
      const { CLINK_LOG_LEVEL: _l, CLINK_LOG_FORMAT: _f, ...env } = process.env;
      const child = spawn(
        process.execPath,
        ['--import', TSX, BIN, 'node', '--role=coordinator', '--port=0', `--ready-file=${ready}`, ...flags],
        { cwd: dir(), env },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise((r) => child.on('exit', r));
      await waitFor('the coordinator to listen', () => existsSync(ready));
      child.kill('SIGTERM');
      await exited;
      return stderr.trim().split('\n');
    };
    const json = await lines([]);
    assert.ok(
      json.every((l) => typeof (JSON.parse(l) as { msg: string }).msg === 'string'),
      json.join('\n'),
    );
    const pretty = await lines(['--log-format', 'pretty']);
    assert.match(
      pretty[0]!,
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(coordinator\): coordinator listening on 127\.0\.0\.1:\d+$/,
    );
    const quiet = await lines(['--log-level', 'warn']);
    assert.ok(
      json.some((l) => l.includes('"level":30')) && !quiet.some((l) => l.includes('"level":30')),
      quiet.join('\n'),
    );
  });

  test('--coordinator defaults to 127.0.0.1:6123, and CLINK_COORDINATOR sets it', async () => {
    const held = await heldPort();
    await held.close(); // a port nothing listens on
    const viaEnv = await clink(['jobs'], dir(), 60_000, { CLINK_COORDINATOR: `127.0.0.1:${held.port}` });
    assert.equal(viaEnv.code, 1);
    assert.match(
      viaEnv.stderr,
      new RegExp(
        `^error: could not connect to the coordinator at 127\\.0\\.0\\.1:${held.port}: connect ECONNREFUSED .*; is one running there\\?`,
      ),
    );
    const help = await clink(['jobs', '--help'], dir());
    assert.match(
      help.stdout,
      helpLine(
        '--coordinator <host:port,...>',
        "the coordinator's control port (clink node --port); several: the HA coordinators, the first that answers leads (default: 127.0.0.1:6123, env: CLINK_COORDINATOR)",
      ),
    );
  });

  test('Ctrl-C of clink run cancels the job, stops its local workers and exits 130 saying "interrupted"', async () => {
    const marker = join(dir(), 'forever-running');
    const child = spawn(
      process.execPath,
      ['--import', TSX, BIN, 'run', 'forever.ts', '--workers', '1', '--param', `marker=${marker}`],
      {
        cwd: dir(),
        env: { ...process.env, CLINK_CACHE_DIR: join(dir(), '.cache') },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await waitFor('the job to run', () => existsSync(marker));
    child.kill('SIGINT');
    assert.equal(await exited, 130);
    assert.match(stderr, /^interrupted: the job was cancelled$/m);
  });
});
