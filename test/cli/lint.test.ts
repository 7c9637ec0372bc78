// clink lint from outside: exit codes (0 clean with warnings allowed, 1 errors, 2 bad usage), job
// modules and --graph-json, --output json; clink node refusing the same findings (lint-at-submit.test.ts:
// logging them, and submit refusing a lint error). Each check's exact message is in test/unit/lint.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../harness/cli.js';
import { LINT_JOBS } from '../harness/lint-jobs.js';

const clink = runCli;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-lint-'));
  for (const [name, text] of Object.entries(LINT_JOBS)) await writeFile(join(dir, name), text);
  await writeFile(
    join(dir, 'wide.json'),
    JSON.stringify({
      specVersion: 1,
      job: { name: 'wide', version: '1' },
      maxParallelism: 128,
      defaultParallelism: 1,
      params: {},
      operators: [
        {
          id: 'in',
          name: 'in',
          type: 'source',
          parallelism: 1,
          keyed: false,
          inputs: 0,
          chaining: 'ALWAYS',
          options: { connector: 'sequence', from: 1, to: 9 },
        },
        {
          id: 'agg',
          name: 'agg',
          type: 'keyedReduce',
          parallelism: 129,
          keyed: true,
          inputs: 1,
          chaining: 'ALWAYS',
          options: {},
        },
        {
          id: 'out',
          name: 'out',
          type: 'sink',
          parallelism: 1,
          keyed: false,
          inputs: 1,
          chaining: 'ALWAYS',
          options: { connector: 'print' },
        },
      ],
      edges: [
        { source: 'in', target: 'agg', kind: 'HASH', inputIndex: 0 },
        { source: 'agg', target: 'out', kind: 'REBALANCE', inputIndex: 0 },
      ],
    }),
  );
  await writeFile(join(dir, 'broken.json'), '{ "specVersion": ');
});
after(() => rm(dir, { recursive: true, force: true }));

/** The check ids of a `--output json` run. */
const checksOf = (stdout: string): string[] =>
  (JSON.parse(stdout) as { findings: { check: string }[] }).findings.map((f) => f.check);

describe('clink lint', { concurrency: 2 }, () => {
  test('nothing to say: exit 0, "lint: clean"', async () => {
    const r = await clink(
      ['lint', 'clean.ts', '--checkpoint-dir', 'ck', '--checkpoint-interval-ms', '1000', '-p', '4'],
      dir,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'lint: clean\n');
  });

  test('settings accepted and ignored, half-set pairs and contradictions: errors exit 1, each on its line; warnings alone exit 0', async () => {
    const r = await clink(
      [
        'lint',
        '--checkpoint-interval-ms',
        '1000',
        '--restore-from-checkpoint-id',
        '3',
        '--alignment',
        'unaligned',
        '--checkpoint-min-pause-ms',
        '50',
        '--checkpoints-retained',
        '2',
      ],
      dir,
    );
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stdout,
      [
        'error: --checkpoint-interval-ms 1000 needs --checkpoint-dir (where checkpoints go) [interval-without-dir]',
        'error: --restore-from-checkpoint-id 3 needs --restore-from-dir (the checkpoint directory or savepoint it is in); without it the job would start with no state [restore-id-without-dir]',
        'warning: --checkpoints-retained 2 is ignored without --checkpoint-dir: no checkpoint is taken [retained-without-dir]',
        'warning: --checkpoint-min-pause-ms 50 is ignored without --checkpoint-dir and --checkpoint-interval-ms: the job takes no periodic checkpoints [periodic-setting-without-interval]',
        'lint: 2 errors, 2 warnings',
        '',
      ].join('\n'),
    );
    const warned = await clink(['lint', '--allow-non-restored-state', '--max-restarts-from-checkpoint', '3'], dir);
    assert.equal(warned.code, 0, warned.stdout);
    assert.match(warned.stdout, /^lint: 0 errors, 2 warnings$/m);
  });

  test('--restore-from-dir runs the restore gate: a state schema the checkpoint cannot be read as is an error, a compatible one is clean', async () => {
    const job = (schema: string): string =>
      [
        "import { defineJob, Schema, States } from 'clink';",
        "export default defineJob({ name: 'schema-job', version: '1' }, (env) => {",
        '  env',
        '    .fromSequence(1, 50)',
        '    .keyBy((x) => x % 5)',
        '    .process<number>(',
        '      {',
        '        processElement(x, ctx, out) {',
        "          const n = ctx.state.value<number>('n');",
        '          n.update((n.value() ?? 0) + 1);',
        '          out.collect(x);',
        '        },',
        '      },',
        `      { states: { n: States.value(${schema}) } },`,
        '    )',
        "    .uid('counter')",
        '    .print();',
        '});',
        '',
      ].join('\n');
    await writeFile(join(dir, 'schema-int.ts'), job('Schema.int()'));
    await writeFile(join(dir, 'schema-number.ts'), job('Schema.number()'));
    await writeFile(join(dir, 'schema-string.ts'), job('Schema.string()'));
    const ckpt = join(dir, 'schema-ckpt');
    const ran = await clink(['run', 'schema-int.ts', '--checkpoint-dir', ckpt, '--checkpoint-interval-ms', '50'], dir);
    assert.equal(ran.code, 0, ran.stderr);
    const refused = await clink(['lint', 'schema-string.ts', '--restore-from-dir', ckpt], dir);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(
      refused.stdout,
      /^error: restore refused: checkpoint \d+ holds state this job reads differently: operator '.*' state 'n': it was checkpointed as int and is declared as string \(int cannot be read as string\); .* \[restore-compatibility\]$/m,
    );
    const clean = await clink(['lint', 'schema-number.ts', '--restore-from-dir', ckpt], dir);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  });

  test('bad usage exits 2: a malformed value, a job and --graph-json both', async () => {
    for (const args of [
      ['lint', '--checkpoint-interval-ms', 'soon'],
      ['lint', 'clean.ts', '--graph-json', 'wide.json'],
      ['lint', '--autoscale', '8..2'],
    ]) {
      const r = await clink(args, dir);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /error: /);
    }
  });

  test('every settings and node check from a command line, each id once, with its exit code', async () => {
    const cases: [string[], number, string[]][] = [
      [
        [
          '--checkpoint-interval-ms',
          '5',
          '--restore-from-checkpoint-id',
          '2',
          '--state-backend',
          '/tmp/s',
          '--checkpoints-retained',
          '2',
          '--max-restarts-from-checkpoint',
          '1',
          '--allow-non-restored-state',
        ],
        1,
        [
          'state-backend-without-dir',
          'interval-without-dir',
          'restore-id-without-dir',
          'non-restored-without-restore',
          'retained-without-dir',
          'restarts-without-dir',
        ],
      ],
      [
        ['--checkpoint-dir', 'ck', '--state-backend', 's3://b/x', '--max-region-retries', '2'],
        1,
        ['state-backend-invalid', 'region-retries-with-dir', 'dir-without-interval'],
      ],
      [['--checkpoint-dir', 'ck', '--checkpoint-interval-ms', '3000000000'], 0, ['timer-too-long']],
      [
        [
          '--role',
          'coordinator',
          '--max-outbound-bulk-bytes',
          '0',
          '--max-outbound-control-bytes',
          '0',
          '--heartbeat-timeout-ms',
          '200000',
          '--restart-drain-timeout-ms',
          '150000',
          '--outbound-stall-timeout-ms',
          '160000',
          '--watchdog-interval-ms',
          '170000',
          '--restart-backoff-initial-ms',
          '90000',
          '--slots',
          '2',
        ],
        1,
        [
          'outbound-bound-zero',
          'outbound-bound-zero',
          'stall-within-heartbeat',
          'stall-beyond-drain',
          'watchdog-above-stall',
          'backoff-initial-above-max',
          'flag-for-other-role',
        ],
      ],
      [
        [
          '--role',
          'coordinator',
          '--max-outbound-bulk-bytes',
          '1024',
          '--watchdog-interval-ms',
          '3000',
          '--outbound-stall-timeout-ms',
          '0',
        ],
        0,
        ['outbound-bulk-below-frame', 'watchdog-above-heartbeat'],
      ],
      [
        [
          '--role',
          'coordinator',
          '--bind-host',
          '0.0.0.0',
          '--tls-key',
          'k.pem',
          '--etcd-endpoints',
          'http://127.0.0.1:2379',
        ],
        1,
        ['tls-flags', 'exposure', 'etcd-without-ha-dir'],
      ],
      [
        [
          '--role',
          'worker',
          '--heartbeat-interval-ms',
          '2000',
          '--reconnect-initial-backoff-ms',
          '9000',
          '--port',
          '1',
        ],
        0,
        ['heartbeat-interval-above-timeout', 'backoff-initial-above-max', 'flag-for-other-role'],
      ],
      [['--lead', '3', '--exchange', '127.0.0.1:7100'], 1, ['mesh-flags']],
      [['--join', '127.0.0.1:7000', '--exchange', '127.0.0.1:7100', '--restart', '--mesh-timeout-ms', '5000'], 0, []],
    ];
    for (const [flags, code, checks] of cases) {
      const r = await clink(['lint', ...flags, '--output', 'json'], dir);
      assert.equal(r.code, code, `${flags.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.deepEqual(checksOf(r.stdout), checks, flags.join(' '));
    }
  });

  test('job graph errors from a module: keyed above 128, an unknown connector, exactly-once through print, a build that is not deterministic', async () => {
    const cases: [string, string[], string][] = [
      [
        'keyed200.ts',
        [],
        "error: keyed operator 'too wide' has parallelism 200, above the 128 key groups; set a parallelism of at most 128 [keyed-above-key-groups]",
      ],
      [
        'unknown.ts',
        [],
        "error: operator 'in' names connector 'kafkaa', which this build does not have; it has blackhole, datagen, file, kafka, nats, nexmark, postgres, print, sequence (or pass a connector object) [unknown-connector]",
      ],
      [
        'printed-exactly-once.ts',
        ['--checkpoint-dir', 'ck', '--checkpoint-interval-ms', '100'],
        "error: the job asks for exactly-once but can give at-least-once: limited by sink 'console' (connector print) [guarantee]",
      ],
      [
        'clocked.ts',
        [],
        "error: the job's build function is not deterministic: two builds gave different graphs (at operators[0].options.to: 10 vs 11); every worker builds it again, so it would run another job than the one planned: do not read the clock, random numbers or anything that changes while building (pass values with --param) [nondeterministic-build]",
      ],
    ];
    for (const [job, flags, line] of cases) {
      const r = await clink(['lint', job, ...flags], dir);
      assert.equal(r.code, 1, `${job}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout.split('\n')[0], line, job);
    }
  });

  test('job graph warnings exit 0: stateful operators without uids under checkpoints, lateness without late output, no watermarks', async () => {
    const stateful = await clink(
      ['lint', 'stateful.ts', '--checkpoint-dir', 'ck', '--checkpoint-interval-ms', '100', '--output', 'json'],
      dir,
    );
    assert.equal(stateful.code, 0, stateful.stderr);
    assert.deepEqual(checksOf(stateful.stdout), [
      'stateful-without-uid',
      'stateful-without-uid',
      'lateness-without-late-output',
    ]);
    const unstamped = await clink(['lint', 'no-watermarks.ts', '--output', 'json'], dir);
    assert.equal(unstamped.code, 0, unstamped.stderr);
    assert.deepEqual(JSON.parse(unstamped.stdout), {
      ok: true,
      errors: 0,
      warnings: 1,
      findings: [
        {
          severity: 'warning',
          check: 'no-watermarks',
          message:
            "event-time window 'per 5' has no watermark strategy between it and 'numbers': records from there carry no event time and no watermark moves it, so it cannot fire; call assignTimestamps(...) after the source, or use { time: 'processing' }",
        },
      ],
    });
  });

  test('capacity and rescale bounds, when asked: --available-slots, --autoscale', async () => {
    const slots = await clink(['lint', 'clean.ts', '-p', '4', '--available-slots', '3'], dir);
    assert.equal(slots.code, 1);
    assert.match(
      slots.stdout,
      /^error: the job needs 4 slots \(slot sharing group 'default': 4\) but --available-slots is 3: lower its parallelism, or add workers or --slots \[slots\]$/m,
    );
    const scale = await clink(['lint', 'clean.ts', '-p', '4', '--autoscale', '8..200', '--output', 'json'], dir);
    assert.equal(scale.code, 1);
    assert.deepEqual(checksOf(scale.stdout), [
      'autoscale-without-checkpoints',
      'autoscale-unreachable',
      'autoscale-outside',
    ]);
    const fine = await clink(['lint', 'clean.ts', '-p', '4', '--autoscale', '2..8', '--checkpoint-dir', 'ck'], dir);
    assert.equal(fine.code, 0, fine.stdout);
  });

  test("--graph-json: the planner's and the lint's checks on a spec; a file that is not one is an error", async () => {
    const wide = await clink(['lint', '--graph-json', 'wide.json'], dir);
    assert.equal(wide.code, 1);
    assert.equal(
      wide.stdout,
      "error: keyed operator 'agg' has parallelism 129, above the 128 key groups; set a parallelism of at most 128 [keyed-above-key-groups]\nlint: 1 error, 0 warnings\n",
    );
    const broken = await clink(['lint', '--graph-json', 'broken.json'], dir);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /^error: --graph-json broken\.json is not JSON: .* \[graph-invalid\]$/m);
  });

  test("a node's flags: a zero bound is an error clink node refuses to start with (exit 2), in the same words", async () => {
    const lint = await clink(
      ['lint', '--role', 'coordinator', '--max-outbound-control-frames', '0', '--outbound-stall-timeout-ms', '1500'],
      dir,
    );
    assert.equal(lint.code, 1);
    const message =
      '--max-outbound-control-frames 0: a bound of zero refuses every frame of its class, and each refusal costs the worker its connection, so every worker would be lost at its first frame; give a positive bound';
    assert.equal(lint.stdout.split('\n')[0], `error: ${message} [outbound-bound-zero]`);
    assert.match(
      lint.stdout,
      /^warning: --outbound-stall-timeout-ms 1500 is at or below --heartbeat-timeout-ms 2000: .* \[stall-within-heartbeat\]$/m,
    );
    const node = await clink(
      ['node', '--role', 'coordinator', '--port', '0', '--max-outbound-control-frames', '0'],
      dir,
    );
    assert.equal(node.code, 2);
    assert.equal(node.stderr, `error: ${message}\n(add --help for usage)\n`);
    // Without --role, a role's checks run when its own flags are given; a flag the role ignores is said.
    const worker = await clink(['lint', '--role', 'worker', '--port', '7000', '--heartbeat-interval-ms', '2500'], dir);
    assert.equal(worker.code, 0);
    assert.match(
      worker.stdout,
      /^warning: --port is a coordinator setting and is ignored by --role worker \[flag-for-other-role\]$/m,
    );
    assert.match(
      worker.stdout,
      /^warning: --heartbeat-interval-ms 2500 is at or above the coordinator's --heartbeat-timeout-ms 2000: /m,
    );
  });
});
