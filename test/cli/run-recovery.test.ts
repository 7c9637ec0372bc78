/** `clink run` with retries and restarts from checkpoints, and the flags that configure them. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli, useJobDir } from '../harness/cli.js';
import { CLI_JOBS } from '../harness/cli-jobs.js';
import { helpLine } from '../helpers.js';

const clink = runCli;

/** The jobs' directory, made before the tests and removed after them. */
const dir = useJobDir('clink-cli-', CLI_JOBS);

describe('clink run: retries, restarts, checkpoints and their flags', () => {
  test('--max-restarts 1: a subtask that fails once is retried and the run succeeds with every record', async () => {
    const r = await clink(
      ['run', 'flaky.ts', '-p', '2', '--workers', '0', '--max-restarts', '1', '--output', 'json', '--no-progress'],
      dir(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout) as { xs: number[] }).xs.sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    await rm(join(dir(), 'failed-once'));
    const refused = await clink(['run', 'flaky.ts', '--workers', '0', '--max-restarts', '-2'], dir());
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--max-restarts.*expected a whole number >= -1, got '-2'/);
  });

  test('the retry and restart budgets go by names that say what they count; the old spellings stay as hidden aliases', async () => {
    const r = await clink(
      [
        'run',
        'flaky.ts',
        '-p',
        '2',
        '--workers',
        '0',
        '--max-region-retries',
        '1',
        '--output',
        'json',
        '--no-progress',
      ],
      dir(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { xs: number[] }).xs.length, 50);
    await rm(join(dir(), 'failed-once'));
    const help = await clink(['run', '--help'], dir());
    assert.match(
      help.stdout,
      helpLine('--max-region-retries <n>', 'without checkpoints: how often each failed subtask is retried'),
    );
    assert.match(
      help.stdout,
      helpLine(
        '--max-restarts-from-checkpoint <n>',
        'with checkpoints: how often the whole job restarts from its last checkpoint',
      ),
    );
    assert.doesNotMatch(help.stdout, /--max-restarts <n>|--max-restarts-on-worker-loss/);
    const nodeHelp = await clink(['node', '--help'], dir());
    assert.match(nodeHelp.stdout, /--max-region-retries <n>/);
    assert.doesNotMatch(nodeHelp.stdout, /--max-restarts <n>/);
    const both = await clink(['run', 'flaky.ts', '--max-restarts', '1', '--max-region-retries', '2'], dir());
    assert.equal(both.code, 2);
    assert.match(both.stderr, /option '--max-restarts <n>' cannot be used with option '--max-region-retries <n>'/);
  });

  test('--checkpoint-dir: the run ends with a final checkpoint; --state-backend puts its state elsewhere', async () => {
    const r = await clink(
      [
        'run',
        'ok.ts',
        '-p',
        '2',
        '--workers',
        '0',
        '--checkpoint-dir',
        'ck',
        '--state-backend',
        `file://${join(dir(), 'state')}`,
      ],
      dir(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /counts \(3 rows\)/);
    const [jobId] = await readdir(join(dir(), 'ck', '_jobs'));
    const markers = (await readdir(join(dir(), 'ck', '_jobs', jobId!))).filter((n) => n.startsWith('COMPLETED-'));
    assert.equal(markers.length, 1);
    assert.deepEqual(await readdir(join(dir(), 'state', '_jobs', jobId!)), [
      `chk-${markers[0]!.slice('COMPLETED-'.length)}`,
    ]);
  });

  test('collect() with checkpoints: a restart from a checkpoint ends with every record exactly once (what was gathered before it is state)', async () => {
    const r = await clink(
      [
        'run',
        'restart-collect.ts',
        '-p',
        '2',
        '--workers',
        '0',
        '--checkpoint-dir',
        'ckr',
        '--checkpoint-interval-ms',
        '200',
        '--output',
        'json',
        '--no-progress',
      ],
      dir(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(
      existsSync(join(dir(), 'failed-after-checkpoint')),
      'the job failed once after a checkpoint and restarted',
    );
    assert.deepEqual(
      (JSON.parse(r.stdout) as { ids: number[] }).ids.sort((a, b) => a - b),
      Array.from({ length: 2000 }, (_, i) => i),
    );
  });

  test('a checkpoint configuration the engine cannot honour is refused, saying what to change', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--checkpoint-dir', 'ck2', '--state-backend', 's3://bucket/x'],
        /--state-backend s3:\/\/bucket\/x: the 's3' scheme is not supported; give a directory path or a file:\/\/ URI/,
      ],
      [['--checkpoint-interval-ms', '100'], /--checkpoint-interval-ms 100 needs --checkpoint-dir/],
    ];
    for (const [flags, message] of cases) {
      const r = await clink(['run', 'ok.ts', '--workers', '0', ...flags], dir());
      assert.equal(r.code, 1, `${flags.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
    const usage = await clink(['run', 'ok.ts', '--checkpoints-retained', '0'], dir());
    assert.equal(usage.code, 2);
    // Unaligned checkpoints are honoured (they were refused until they existed).
    const unaligned = await clink(
      [
        'run',
        'ok.ts',
        '--workers',
        '0',
        '--checkpoint-dir',
        'ck3',
        '--checkpoint-interval-ms',
        '50',
        '--alignment',
        'unaligned',
      ],
      dir(),
    );
    assert.equal(unaligned.code, 0, unaligned.stderr);
  });

  test('bad flags are usage errors with exit code 2', async () => {
    for (const args of [['run'], ['run', 'ok.ts', '-p', '0'], ['run', 'ok.ts', '--param', 'novalue'], ['bogus']]) {
      const r = await clink(args, dir());
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /error: /);
    }
  });
});
