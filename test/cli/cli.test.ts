import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { progressFrames, runCli, runCliOnTerminal } from '../harness/cli.js';
import { helpLine } from '../helpers.js';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

const clink = runCli;

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
    'restart-collect.ts': `
      import { existsSync, readdirSync, writeFileSync } from 'node:fs';
      import { defineJob } from 'clink';
      const checkpointed = () => { try { return readdirSync('ckr/_jobs').some((j) => readdirSync('ckr/_jobs/' + j).some((n) => n.startsWith('COMPLETED-'))); } catch { return false; } };
      export default defineJob({ name: 'restart-collect', version: '1' }, (env) => {
        env.fromSource<{ id: number }>('datagen', { count: 2000, rowsPerSecond: 1000 }).map((r) => {
          if (!existsSync('failed-after-checkpoint') && checkpointed()) { writeFileSync('failed-after-checkpoint', ''); throw new Error('fails once, after a checkpoint'); }
          return r.id;
        }).collect('ids');
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
    const r = await runCliOnTerminal(['run', 'slow.ts', '--max-rows', '1'], dir);
    assert.equal(r.code, 0, r.stdout);
    const frames = progressFrames(r.stdout, 'slowish');
    assert.ok(frames.length >= 2, `progress redrawn ${frames.length} time(s)`);
    assert.match(frames.at(-1)!, /^\[clink\] slowish {2}FINISHED {2}\d+\.\ds {2}in 300 records {2}out 300 records\r?\n/);
    // While it ran: the state, and rates once there are two samples.
    assert.ok(frames.some((f) => /^\[clink\] slowish {2}RUNNING {2}\d+\.\ds {2}in \d+ records \(\d+\/s\) {2}out \d+ records \(\d+\/s\)/.test(f)), frames.join(' | '));
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

  test('collect() with checkpoints: a restart from a checkpoint ends with every record exactly once (what was gathered before it is state)', async () => {
    const r = await clink(['run', 'restart-collect.ts', '-p', '2', '--workers', '0', '--checkpoint-dir', 'ckr', '--checkpoint-interval-ms', '200', '--output', 'json', '--no-progress'], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(join(dir, 'failed-after-checkpoint')), 'the job failed once after a checkpoint and restarted');
    assert.deepEqual((JSON.parse(r.stdout) as { ids: number[] }).ids.sort((a, b) => a - b), Array.from({ length: 2000 }, (_, i) => i));
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
