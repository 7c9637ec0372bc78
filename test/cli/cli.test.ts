import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { progressFrames, runCli, runCliOnTerminal, useJobDir } from '../harness/cli.js';
import { CLI_JOBS } from '../harness/cli-jobs.js';

const clink = runCli;

/** The jobs' directory, made before the tests and removed after them. */
const dir = useJobDir('clink-cli-', CLI_JOBS);

describe('clink run', () => {
  test('runs a job file outside any package, prints results and a summary, exits 0', async () => {
    const r = await clink(['run', 'ok.ts', '--parallelism', '2', '--param', 'n=11'], dir());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /printed line/);
    assert.match(r.stdout, /counts \(11 rows\)/);
    assert.match(r.stdout, /key \| count/);
    assert.match(r.stderr, /job 'cli-ok' finished in [\d.]+ s \(parallelism 2, on 2 local workers\)/);
    assert.match(r.stderr, /\[clink\] cli-ok .* in 12 records {2}out 12 records/);
  });

  test('on a terminal, progress (elapsed, records in and out) is redrawn while the job runs', async () => {
    const r = await runCliOnTerminal(['run', 'slow.ts', '--max-rows', '1'], dir());
    assert.equal(r.code, 0, r.stdout);
    const frames = progressFrames(r.stdout, 'slowish');
    assert.ok(frames.length >= 2, `progress redrawn ${frames.length} time(s)`);
    assert.match(
      frames.at(-1)!,
      /^\[clink\] slowish {2}FINISHED {2}\d+\.\ds {2}in 300 records {2}out 300 records\r?\n/,
    );
    // While it ran: the state, and rates once there are two samples.
    assert.ok(
      frames.some((f) =>
        /^\[clink\] slowish {2}RUNNING {2}\d+\.\ds {2}in \d+ records \(\d+\/s\) {2}out \d+ records \(\d+\/s\)/.test(f),
      ),
      frames.join(' | '),
    );
  });

  test('a plain JavaScript job runs too', async () => {
    const r = await clink(['run', 'plain.js'], dir());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /js ok/);
  });

  test('--output json prints collected results as JSON', async () => {
    const r = await clink(['run', 'ok.ts', '--output', 'json', '--no-progress'], dir());
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout.split('\n').find((l) => l.startsWith('{'))!) as { counts: unknown[] };
    assert.equal(json.counts.length, 3);
  });

  const failures: [string, string[], RegExp][] = [
    ['a bad job path', ['run', 'missing.ts'], /^error: job file not found: missing\.ts/],
    [
      'a syntax error',
      ['run', 'syntax.ts'],
      /^error: job module syntax\.ts does not compile:\n.*syntax\.ts:3:\d+: Expected "\]" but found "\)"/,
    ],
    [
      'a missing default export',
      ['run', 'nodefault.ts'],
      /^error: job module nodefault\.ts has no default export; end it with: export default defineJob/,
    ],
    [
      'a default export that is not a job',
      ['run', 'notajob.js'],
      /^error: the default export of notajob\.js is an object, not a job/,
    ],
    [
      'a build function that throws',
      ['run', 'throws.ts'],
      /^error: job 'thrower': build function threw: missing --param topic/,
    ],
  ];
  for (const [what, args, message] of failures) {
    test(`${what} gets one clear message and exit code 1, no engine stack`, async () => {
      const r = await clink(args, dir());
      assert.equal(r.code, 1);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /at .*src\/(runtime|loader|cli)\//, 'no engine stack frames');
    });
  }

  test('an exception in user code names the operator and shows the original stack', async () => {
    const r = await clink(['run', 'fails.ts'], dir());
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^error: job failed: operator 'check amount' \(map, subtask 1\/1\) failed: TypeError: amount 7 is cursed/m,
    );
    assert.match(
      r.stderr,
      /caused by: TypeError: amount 7 is cursed\n\s+at (\S+\.)?checkAmount \(.*clink-cli-\w+\/fails\.ts:\d+:\d+\)/,
    );
  });
});

describe('clink plan', () => {
  test('prints the chained tasks, and the same JSON plan on every build', async () => {
    const text = await clink(['plan', 'ok.ts', '-p', '3'], dir());
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\[3x\] _inline_source_0 -> _inline_map_0/);
    assert.match(text.stdout, /\[3x\] _inline_keyedReduce_0 -> _inline_collect_0 {2}<- HASH from _inline_map_0/);
    const a = await clink(['plan', 'ok.ts', '--json'], dir());
    const b = await clink(['plan', 'ok.ts', '--json'], dir());
    assert.equal(a.stdout, b.stdout);
    assert.equal((JSON.parse(a.stdout) as { job: { name: string } }).job.name, 'cli-ok');
  });
});
