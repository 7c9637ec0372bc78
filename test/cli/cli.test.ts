import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, runCli, TSX, type CliRun } from '../harness/cli.js';
import { helpLine } from '../helpers.js';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

const clink = runCli;
type Run = CliRun;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-cli-'));
  const files: Record<string, string> = {
    'ok.ts': `
      import { defineJob } from 'clink';
      interface W { word: string }
      export default defineJob({ name: 'cli-ok', version: '1' }, (env) => {
        const n = Number(env.params.n ?? 3);
        env.fromSequence(1, n).map((i): W => ({ word: 'w' + (i % 2) }))
          .keyBy((w) => w.word).count().collect('counts');
        env.fromElements(['printed line']).print();
      });`,
    'syntax.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'x', version: '1' }, (env) => {\n  env.fromElements([1).print();\n});\n`,
    'nodefault.ts': `import { defineJob } from 'clink';\nexport const job = defineJob({ name: 'x', version: '1' }, (env) => env.fromElements([1]).print());\n`,
    'notajob.js': `export default { name: 'looks like a job' };\n`,
    'throws.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'thrower', version: '1' }, () => { throw new Error('missing --param topic'); });\n`,
    'fails.ts': `
      import { defineJob } from 'clink';
      function checkAmount(x: number): number { if (x === 7) throw new TypeError('amount 7 is cursed'); return x; }
      export default defineJob({ name: 'fails', version: '1' }, (env) => {
        env.fromSequence(1, 10).map(checkAmount).name('check amount').print();
      });`,
    'flaky.ts': `
      import { existsSync, writeFileSync } from 'node:fs';
      import { defineJob } from 'clink';
      export default defineJob({ name: 'flaky', version: '1' }, (env) => {
        env.fromSequence(1, 50).map((x) => {
          if (x === 20 && !existsSync('failed-once')) { writeFileSync('failed-once', ''); throw new Error('record 20 fails once'); }
          return x;
        }).collect('xs');
      });`,
    'slow.ts': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'slowish', version: '1' }, (env) => env.fromSource('datagen', { count: 300, rowsPerSecond: 500 }).collect());\n`,
    'plain.js': `import { defineJob } from 'clink';\nexport default defineJob({ name: 'plain-js', version: '1' }, (env) => env.fromElements(['js ok']).print());\n`,
  };
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('clink run', () => {
  test('runs a job file outside any package, prints results and a summary, exits 0', async () => {
    const r = await clink(['run', 'ok.ts', '--parallelism', '2', '--param', 'n=11'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /printed line/);
    assert.match(r.stdout, /counts \(11 rows\)/);
    assert.match(r.stdout, /key \| count/);
    assert.match(r.stderr, /job 'cli-ok' finished in [\d.]+ s \(parallelism 2, on 2 local workers\)/);
    assert.match(r.stderr, /\[clink\] cli-ok .* in 12 records {2}out 12 records/);
  });

  test('on a terminal, progress (elapsed, records in and out) is redrawn while the job runs', async () => {
    // script(1) from util-linux runs the CLI on a pseudo-terminal, as a person would see it.
    const tsx = TSX;
    const r = await new Promise<Run>((res, rej) => {
      const child = spawn('script', ['-qec', `"${process.execPath}" --import "${tsx}" "${BIN}" run slow.ts --max-rows 1`, '/dev/null'], {
        cwd: dir,
        env: { ...process.env, CLINK_CACHE_DIR: join(dir, '.cache') },
      });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.on('error', rej);
      child.on('close', (code) => res({ code, stdout, stderr: '' }));
    });
    assert.equal(r.code, 0, r.stdout);
    const frames = r.stdout.split('\r\x1b[2K').filter((f) => f.startsWith('[clink] slowish'));
    assert.ok(frames.length >= 2, `progress redrawn ${frames.length} time(s)`);
    assert.match(frames.at(-1)!, /^\[clink\] slowish {2}\d+\.\ds {2}in 300 records {2}out 300 records/);
  });

  test('a plain JavaScript job runs too', async () => {
    const r = await clink(['run', 'plain.js'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /js ok/);
  });

  test('--output json prints collected results as JSON', async () => {
    const r = await clink(['run', 'ok.ts', '--output', 'json', '--no-progress'], dir);
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout.split('\n').find((l) => l.startsWith('{'))!) as { counts: unknown[] };
    assert.equal(json.counts.length, 3);
  });

  const failures: [string, string[], RegExp][] = [
    ['a bad job path', ['run', 'missing.ts'], /^error: job file not found: missing\.ts/],
    ['a syntax error', ['run', 'syntax.ts'], /^error: job module syntax\.ts does not compile:\n.*syntax\.ts:3:\d+: Expected "\]" but found "\)"/],
    ['a missing default export', ['run', 'nodefault.ts'], /^error: job module nodefault\.ts has no default export; end it with: export default defineJob/],
    ['a default export that is not a job', ['run', 'notajob.js'], /^error: the default export of notajob\.js is an object, not a job/],
    ['a build function that throws', ['run', 'throws.ts'], /^error: job 'thrower': build function threw: missing --param topic/],
  ];
  for (const [what, args, message] of failures) {
    test(`${what} gets one clear message and exit code 1, no engine stack`, async () => {
      const r = await clink(args, dir);
      assert.equal(r.code, 1);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /at .*src\/(runtime|loader|cli)\//, 'no engine stack frames');
    });
  }

  test('an exception in user code names the operator and shows the original stack', async () => {
    const r = await clink(['run', 'fails.ts'], dir);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: job failed: operator 'check amount' \(map, subtask 1\/1\) failed: TypeError: amount 7 is cursed/m);
    assert.match(r.stderr, /caused by: TypeError: amount 7 is cursed\n\s+at (\S+\.)?checkAmount \(.*clink-cli-\w+\/fails\.ts:\d+:\d+\)/);
  });

  test('--max-restarts 1: a subtask that fails once is retried and the run succeeds with every record', async () => {
    const r = await clink(['run', 'flaky.ts', '-p', '2', '--workers', '0', '--max-restarts', '1', '--output', 'json', '--no-progress'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as { xs: number[] }).xs.sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
    await rm(join(dir, 'failed-once'));
    const refused = await clink(['run', 'flaky.ts', '--workers', '0', '--max-restarts', '-2'], dir);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--max-restarts.*expected a whole number >= -1, got '-2'/);
  });

  test('the retry and restart budgets go by names that say what they count; the old spellings stay as hidden aliases', async () => {
    const r = await clink(['run', 'flaky.ts', '-p', '2', '--workers', '0', '--max-region-retries', '1', '--output', 'json', '--no-progress'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { xs: number[] }).xs.length, 50);
    await rm(join(dir, 'failed-once'));
    const help = await clink(['run', '--help'], dir);
    assert.match(help.stdout, helpLine('--max-region-retries <n>', 'without checkpoints: how often each failed subtask is retried'));
    assert.match(help.stdout, helpLine('--max-restarts-from-checkpoint <n>', 'with checkpoints: how often the whole job restarts from its last checkpoint'));
    assert.doesNotMatch(help.stdout, /--max-restarts <n>|--max-restarts-on-worker-loss/);
    const nodeHelp = await clink(['node', '--help'], dir);
    assert.match(nodeHelp.stdout, /--max-region-retries <n>/);
    assert.doesNotMatch(nodeHelp.stdout, /--max-restarts <n>/);
    const both = await clink(['run', 'flaky.ts', '--max-restarts', '1', '--max-region-retries', '2'], dir);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /option '--max-restarts <n>' cannot be used with option '--max-region-retries <n>'/);
  });

  test('--checkpoint-dir: the run ends with a final checkpoint; --state-backend puts its state elsewhere', async () => {
    const r = await clink(['run', 'ok.ts', '-p', '2', '--workers', '0', '--checkpoint-dir', 'ck', '--state-backend', `file://${join(dir, 'state')}`], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /counts \(3 rows\)/);
    const [jobId] = await readdir(join(dir, 'ck', '_jobs'));
    const markers = (await readdir(join(dir, 'ck', '_jobs', jobId!))).filter((n) => n.startsWith('COMPLETED-'));
    assert.equal(markers.length, 1);
    assert.deepEqual(await readdir(join(dir, 'state', '_jobs', jobId!)), [`chk-${markers[0]!.slice('COMPLETED-'.length)}`]);
  });

  test('a checkpoint configuration the engine cannot honour is refused, saying what to change', async () => {
    const cases: [string[], RegExp][] = [
      [['--checkpoint-dir', 'ck2', '--alignment', 'unaligned'], /--alignment unaligned: only aligned checkpoints are supported so far; submit with --alignment aligned/],
      [['--checkpoint-dir', 'ck2', '--state-backend', 's3://bucket/x'], /--state-backend s3:\/\/bucket\/x: the 's3' scheme is not supported; give a directory path or a file:\/\/ URI/],
      [['--checkpoint-interval-ms', '100'], /--checkpoint-interval-ms 100 needs --checkpoint-dir/],
    ];
    for (const [flags, message] of cases) {
      const r = await clink(['run', 'ok.ts', '--workers', '0', ...flags], dir);
      assert.equal(r.code, 1, `${flags.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
    const usage = await clink(['run', 'ok.ts', '--checkpoints-retained', '0'], dir);
    assert.equal(usage.code, 2);
  });

  test('bad flags are usage errors with exit code 2', async () => {
    for (const args of [['run'], ['run', 'ok.ts', '-p', '0'], ['run', 'ok.ts', '--param', 'novalue'], ['bogus']]) {
      const r = await clink(args, dir);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /error: /);
    }
  });
});

describe('clink plan', () => {
  test('prints the chained tasks, and the same JSON plan on every build', async () => {
    const text = await clink(['plan', 'ok.ts', '-p', '3'], dir);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\[3x\] _inline_source_0 -> _inline_map_0/);
    assert.match(text.stdout, /\[3x\] _inline_keyedReduce_0 -> _inline_collect_0 {2}<- HASH from _inline_map_0/);
    const a = await clink(['plan', 'ok.ts', '--json'], dir);
    const b = await clink(['plan', 'ok.ts', '--json'], dir);
    assert.equal(a.stdout, b.stdout);
    assert.equal((JSON.parse(a.stdout) as { job: { name: string } }).job.name, 'cli-ok');
  });
});
