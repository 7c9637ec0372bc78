// The lint's checks, each on a planted bad setting or job: the exact message, its severity and check id.
// test/cli/lint.test.ts proves the wiring (exit codes, clink node, clink submit).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NO_CHECKPOINTS } from '../../src/client/index.js';
import { Coordinator, DEFAULT_COORDINATOR_CONFIG } from '../../src/coordinator/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { memoryLogger } from '../../src/log/index.js';
import {
  autoscaleFindings,
  checkpointSettingsFindings,
  coordinatorConfigFindings,
  determinismFindings,
  firstDifference,
  formatFindings,
  jobGraphFindings,
  refuseOnErrors,
  roleFindings,
  workerConfigFindings,
  type Finding,
} from '../../src/lint/index.js';
import { buildJob, defineJob, Windows, type JobEnvironment } from '../../src/index.js';
import { ClinkError } from '../../src/errors.js';

const only = (findings: Finding[], check: string): Finding => {
  const hits = findings.filter((f) => f.check === check);
  assert.equal(hits.length, 1, `one ${check} among ${JSON.stringify(findings.map((f) => f.check))}`);
  return hits[0]!;
};
const settings = (o: Partial<typeof NO_CHECKPOINTS>) => ({ ...NO_CHECKPOINTS, ...o });
const CHECKPOINTED = settings({ checkpointDir: '/tmp/ckpt', intervalMs: 1_000 });
const specOf = (build: (env: JobEnvironment) => void, o: { parallelism?: number; guarantee?: 'exactly-once' } = {}) =>
  buildJob(defineJob({ name: 'j', version: '1', ...(o.guarantee ? { guarantee: o.guarantee } : {}) }, build), {
    parallelism: o.parallelism ?? 1,
  }).spec;
const graph = (
  build: (env: JobEnvironment) => void,
  o: { parallelism?: number; checkpointing?: boolean; availableSlots?: number; guarantee?: 'exactly-once' } = {},
) =>
  jobGraphFindings(specOf(build, o), {
    checkpointing: o.checkpointing ?? false,
    regionRetries: 0,
    ...(o.availableSlots ? { availableSlots: o.availableSlots } : {}),
  });

describe('lint: checkpoint settings', () => {
  test('a clean set has no findings; the defaults are clean', () => {
    assert.deepEqual(checkpointSettingsFindings(NO_CHECKPOINTS), []);
    assert.deepEqual(checkpointSettingsFindings(CHECKPOINTED), []);
    assert.deepEqual(checkpointSettingsFindings({ ...CHECKPOINTED, alignment: 'unaligned' }), []);
  });

  test('errors: an interval without a directory, half a restore pair, unaligned, a state backend without a directory or malformed', () => {
    const f = checkpointSettingsFindings(
      settings({ intervalMs: 500, restoreFromCheckpointId: 3, stateBackendUri: '/tmp/s' }),
    );
    assert.equal(
      only(f, 'interval-without-dir').message,
      '--checkpoint-interval-ms 500 needs --checkpoint-dir (where checkpoints go)',
    );
    assert.equal(
      only(f, 'restore-id-without-dir').message,
      '--restore-from-checkpoint-id 3 needs --restore-from-dir (the checkpoint directory or savepoint it is in); without it the job would start with no state',
    );
    assert.equal(
      only(f, 'state-backend-without-dir').message,
      '--state-backend /tmp/s needs --checkpoint-dir too (the COMPLETED markers go there)',
    );
    assert.ok(f.every((x) => x.severity === 'error' && x.code === 'CLINK_ERR_INVALID_ARGUMENT'));
    const bad = checkpointSettingsFindings(
      settings({ checkpointDir: '/tmp/c', intervalMs: 1, stateBackendUri: 's3://bucket/x' }),
    );
    assert.equal(only(bad, 'state-backend-invalid').severity, 'error');
    assert.equal(
      only(checkpointSettingsFindings(settings({ checkpointsRetained: 0 })), 'checkpoints-retained').message,
      '--checkpoints-retained 0: keep at least 1 checkpoint',
    );
  });

  test('warnings: settings accepted and ignored', () => {
    const none = checkpointSettingsFindings(
      settings({ checkpointsRetained: 3, maxRestartsOnWorkerLoss: 5, allowNonRestoredState: true }),
    );
    assert.equal(
      only(none, 'retained-without-dir').message,
      '--checkpoints-retained 3 is ignored without --checkpoint-dir: no checkpoint is taken',
    );
    assert.match(
      only(none, 'restarts-without-dir').message,
      /^--max-restarts-from-checkpoint 5 is ignored without --checkpoint-dir/,
    );
    assert.equal(
      only(none, 'non-restored-without-restore').message,
      '--allow-non-restored-state is ignored without --restore-from-dir: nothing is restored',
    );
    const dir = checkpointSettingsFindings(settings({ checkpointDir: '/tmp/c', maxRestarts: 2 }));
    assert.match(
      only(dir, 'region-retries-with-dir').message,
      /^--max-region-retries 2 is ignored with --checkpoint-dir: a failure restarts the job from its last checkpoint/,
    );
    assert.match(
      only(dir, 'dir-without-interval').message,
      /^--checkpoint-dir without --checkpoint-interval-ms: checkpoints are taken only for savepoints and at the end of input/,
    );
    assert.ok([...none, ...dir].every((x) => x.severity === 'warning'));
    const noInterval = checkpointSettingsFindings(
      settings({ checkpointDir: '/tmp/c', minPauseMs: 500, tolerableFailures: 3, timeoutMs: 2 ** 32 }),
    );
    assert.deepEqual(
      noInterval.filter((x) => x.check === 'periodic-setting-without-interval').map((x) => x.message),
      [
        '--checkpoint-min-pause-ms 500 is ignored without --checkpoint-dir and --checkpoint-interval-ms: the job takes no periodic checkpoints',
        '--tolerable-failed-checkpoints 3 is ignored without --checkpoint-dir and --checkpoint-interval-ms: the job takes no periodic checkpoints',
      ],
    );
    assert.match(
      only(noInterval, 'timer-too-long').message,
      /^--checkpoint-timeout-ms 4294967296 is longer than a timer/,
    );
    const periodic = { checkpointDir: '/tmp/c', intervalMs: 1_000 };
    assert.match(
      only(
        checkpointSettingsFindings(settings({ ...periodic, alignedTimeoutMs: 500 })),
        'aligned-timeout-without-unaligned',
      ).message,
      /^--aligned-checkpoint-timeout-ms 500 is ignored with --alignment aligned: give --alignment adaptive/,
    );
    assert.match(
      only(checkpointSettingsFindings(settings({ ...periodic, alignment: 'adaptive' })), 'adaptive-without-timeout')
        .message,
      /^--alignment adaptive without --aligned-checkpoint-timeout-ms takes every periodic checkpoint unaligned/,
    );
    assert.deepEqual(
      checkpointSettingsFindings(settings({ ...periodic, alignment: 'adaptive', alignedTimeoutMs: 500 })),
      [],
      'adaptive with a timeout: nothing to say',
    );
  });

  test('the coordinator refuses a submit with the same message (refuseOnErrors), one line per error', () => {
    assert.throws(
      () => refuseOnErrors(checkpointSettingsFindings(settings({ intervalMs: 500, restoreFromCheckpointId: 3 }))),
      (err: unknown) =>
        err instanceof ClinkError &&
        err.code === 'CLINK_ERR_INVALID_ARGUMENT' &&
        err.message ===
          '--checkpoint-interval-ms 500 needs --checkpoint-dir (where checkpoints go)\nerror: --restore-from-checkpoint-id 3 needs --restore-from-dir (the checkpoint directory or savepoint it is in); without it the job would start with no state',
    );
    refuseOnErrors(checkpointSettingsFindings(settings({ checkpointsRetained: 3 }))); // warnings do not refuse
  });
});

describe('lint: a node', () => {
  test("the coordinator's defaults are clean", () =>
    assert.deepEqual(coordinatorConfigFindings(DEFAULT_COORDINATOR_CONFIG), []));

  test('a Coordinator refuses a zero outbound bound before it listens', async () => {
    const { log } = memoryLogger('error');
    await assert.rejects(
      Coordinator.start({ port: 0, maxOutboundBulkBytes: 0 }, { log, metrics: new ClinkMetrics() }),
      (err: unknown) => err instanceof ClinkError && /^--max-outbound-bulk-bytes 0: a bound of zero/.test(err.message),
    );
  });

  test('a zero outbound bound is an error; a bulk bound under one frame a warning', () => {
    const f = coordinatorConfigFindings({
      ...DEFAULT_COORDINATOR_CONFIG,
      maxOutboundControlFrames: 0,
      maxOutboundBulkBytes: 1024,
    });
    assert.equal(
      only(f, 'outbound-bound-zero').message,
      '--max-outbound-control-frames 0: a bound of zero refuses every frame of its class, and each refusal costs the worker its connection, so every worker would be lost at its first frame; give a positive bound',
    );
    assert.equal(only(f, 'outbound-bound-zero').severity, 'error');
    assert.match(
      only(f, 'outbound-bulk-below-frame').message,
      /^--max-outbound-bulk-bytes 1024 is below one largest frame \(268435456 bytes\)/,
    );
  });

  test('liveness: a stall timeout at or below the heartbeat timeout, at or above the drain timeout, a watchdog slower than either', () => {
    const low = coordinatorConfigFindings({
      ...DEFAULT_COORDINATOR_CONFIG,
      outboundStallTimeoutMs: 2_000,
      watchdogIntervalMs: 2_500,
    });
    assert.match(
      only(low, 'stall-within-heartbeat').message,
      /^--outbound-stall-timeout-ms 2000 is at or below --heartbeat-timeout-ms 2000: /,
    );
    assert.equal(
      only(low, 'watchdog-above-stall').message,
      '--watchdog-interval-ms 2500 is longer than --outbound-stall-timeout-ms 2000: the watchdog runs the stall check, so the effective stall timeout is 2500 ms',
    );
    assert.match(
      only(low, 'watchdog-above-heartbeat').message,
      /^--watchdog-interval-ms 2500 is longer than --heartbeat-timeout-ms 2000/,
    );
    const high = coordinatorConfigFindings({ ...DEFAULT_COORDINATOR_CONFIG, outboundStallTimeoutMs: 120_000 });
    assert.match(
      only(high, 'stall-beyond-drain').message,
      /^--outbound-stall-timeout-ms 120000 is at or above --restart-drain-timeout-ms 120000: /,
    );
    assert.ok([...low, ...high].every((x) => x.severity === 'warning'));
    // With the stall verdict off only the bounds are checked.
    assert.deepEqual(coordinatorConfigFindings({ ...DEFAULT_COORDINATOR_CONFIG, outboundStallTimeoutMs: 0 }), []);
  });

  test('a delay too long for a timer means never: said of its flag', () => {
    const f = coordinatorConfigFindings({ ...DEFAULT_COORDINATOR_CONFIG, restartDrainTimeoutMs: 2 ** 31 });
    assert.equal(
      only(f, 'timer-too-long').message,
      '--restart-drain-timeout-ms 2147483648 is longer than a timer can wait (2147483647 ms, about 24.8 days), so it means never; give a smaller value',
    );
  });

  test("a worker: heartbeats slower than the coordinator's timeout, contradicting backoffs; flags its role ignores", () => {
    const w = {
      heartbeatIntervalMs: 500,
      peerUpdateTimeoutMs: 30_000,
      coordinatorHeartbeatTimeoutMs: 3_000,
      taskStallTimeoutMs: 30_000,
      batchLingerMs: 0,
      reconnectInitialBackoffMs: 100,
      reconnectMaxBackoffMs: 5_000,
    };
    assert.deepEqual(workerConfigFindings(w, 2_000), []);
    const f = workerConfigFindings({ ...w, heartbeatIntervalMs: 2_000, reconnectInitialBackoffMs: 9_000 }, 2_000);
    assert.equal(
      only(f, 'heartbeat-interval-above-timeout').message,
      "--heartbeat-interval-ms 2000 is at or above the coordinator's --heartbeat-timeout-ms 2000: an idle worker would be declared lost between two heartbeats",
    );
    assert.equal(
      only(f, 'backoff-initial-above-max').message,
      '--reconnect-initial-backoff-ms 9000 is above --reconnect-max-backoff-ms 5000: every wait is cut to the maximum',
    );
    assert.deepEqual(
      roleFindings('worker', [
        { flag: '--port', role: 'coordinator' },
        { flag: '--slots', role: 'worker' },
      ]).map((x) => x.message),
      ['--port is a coordinator setting and is ignored by --role worker'],
    );
  });
});

describe('lint: a job graph', () => {
  test('a keyed operator above 128 subtasks is an error, each one named', () => {
    const f = graph((env) => {
      env
        .fromSequence(1, 10)
        .keyBy((x) => x % 3)
        .count()
        .setParallelism(200)
        .print()
        .setParallelism(1);
    });
    assert.equal(
      only(f, 'keyed-above-key-groups').message,
      "keyed operator '_inline_keyedReduce_0' has parallelism 200, above the 128 key groups; set a parallelism of at most 128",
    );
    assert.equal(only(f, 'keyed-above-key-groups').code, 'CLINK_ERR_PLAN');
    assert.equal(f.filter((x) => x.check === 'graph-structure').length, 0, 'the planner says the same thing once');
  });

  test('a graph larger than --available-slots is an error, only when asked', () => {
    const build = (env: JobEnvironment) =>
      void env
        .fromSequence(1, 10)
        .keyBy((x) => x)
        .count()
        .print();
    assert.equal(
      only(graph(build, { parallelism: 4, availableSlots: 3 }), 'slots').message,
      "the job needs 4 slots (slot sharing group 'default': 4) but --available-slots is 3: lower its parallelism, or add workers or --slots",
    );
    assert.deepEqual(graph(build, { parallelism: 4 }), []);
    assert.deepEqual(graph(build, { parallelism: 4, availableSlots: 4 }), []);
  });

  test('a connector this build does not have is an error naming the ones it has', () => {
    const f = graph((env) => void env.fromSource('kafkaa', {}).name('in').print());
    assert.match(
      only(f, 'unknown-connector').message,
      /^operator 'in' names connector 'kafkaa', which this build does not have; it has blackhole, datagen, file, kafka, /,
    );
  });

  test('exactly-once asked of a sink that cannot give it is an error naming the sink', () => {
    const f = graph((env) => void env.fromSequence(1, 3).print().name('console'), {
      checkpointing: true,
      guarantee: 'exactly-once',
    });
    assert.equal(
      only(f, 'guarantee').message,
      "the job asks for exactly-once but can give at-least-once: limited by sink 'console' (connector print)",
    );
    assert.equal(only(f, 'guarantee').code, 'CLINK_ERR_CONNECTOR');
  });

  test('stateful operators without a uid in a checkpointed job are warned of, each; a uid, or no checkpoints, silences it', () => {
    const build = (uids: boolean) => (env: JobEnvironment) => {
      const src = env.fromSource<{ k: number; ts: number }>('datagen', {
        count: 10,
        fields: { k: { kind: 'int', min: 1, max: 3 }, ts: { kind: 'timestamp' } },
      });
      const counted = (uids ? src.uid('readings') : src)
        .assignTimestamps((r) => r.ts)
        .keyBy((r) => r.k)
        .window(Windows.tumbling(10))
        .count();
      (uids ? counted.uid('counts') : counted).map((c) => c.count).print();
    };
    const f = graph(build(false), { checkpointing: true });
    assert.deepEqual(
      f.map((x) => [x.check, x.severity, x.message]),
      [
        [
          'stateful-without-uid',
          'warning',
          "operator _inline_source_0 keeps state (source) and has no uid(): its generated id changes when operators are added before it, and a checkpoint finds state by id, so a changed job cannot restore it; give it .uid('<a stable name>')",
        ],
        [
          'stateful-without-uid',
          'warning',
          "operator _inline_window_0 keeps state (window) and has no uid(): its generated id changes when operators are added before it, and a checkpoint finds state by id, so a changed job cannot restore it; give it .uid('<a stable name>')",
        ],
      ],
    );
    assert.deepEqual(graph(build(true), { checkpointing: true }), []);
    assert.deepEqual(graph(build(false), { checkpointing: false }), []);
  });

  test("an event-time window with no watermark strategy upstream is warned of, naming the source; Kafka's own watermarks count", () => {
    const f = graph((env) => {
      const a = env.fromSequence(1, 10).name('numbers');
      const b = env
        .fromSequence(1, 10)
        .name('stamped')
        .assignTimestamps((x) => x);
      a.union(b)
        .keyBy((x) => x % 2)
        .window(Windows.tumbling(5))
        .count()
        .name('per 5')
        .print();
    });
    assert.equal(
      only(f, 'no-watermarks').message,
      "event-time window 'per 5' has no watermark strategy between it and 'numbers': records from there carry no event time and no watermark moves it, so it cannot fire; call assignTimestamps(...) after the source, or use { time: 'processing' }",
    );
    assert.deepEqual(
      graph(
        (env) =>
          void env
            .fromSequence(1, 10)
            .keyBy((x) => x)
            .window(Windows.tumbling(5), { time: 'processing' })
            .count()
            .print(),
      ),
      [],
    );
    assert.deepEqual(
      graph(
        (env) =>
          void env
            .fromSource<{ key: string }>('kafka', {
              bootstrapServers: 'k:9092',
              topic: 't',
              watermarks: { maxOutOfOrdernessMs: 0 },
            })
            .keyBy((r) => r.key)
            .window(Windows.tumbling(5))
            .count()
            .print(),
      ),
      [],
    );
  });

  test('a window with allowed lateness and no late-data output is warned of; with lateData() it is not', () => {
    const f = graph((env) => {
      env
        .fromSequence(1, 10)
        .assignTimestamps((x) => x)
        .keyBy((x) => x % 2)
        .window(Windows.tumbling(5), { allowedLatenessMs: 1_000 })
        .count()
        .name('pairs')
        .print();
    });
    assert.equal(
      only(f, 'lateness-without-late-output').message,
      "window 'pairs' allows 1000 ms of lateness but has no late-data output: records later than that are dropped, and only counted; call sideOutputLateData() on the windowed stream and read lateData() on its result",
    );
    const withOutput = graph((env) => {
      const counts = env
        .fromSequence(1, 10)
        .assignTimestamps((x) => x)
        .keyBy((x) => x % 2)
        .window(Windows.tumbling(5), { allowedLatenessMs: 1_000 })
        .sideOutputLateData()
        .count();
      counts.print();
      counts.lateData().print();
    });
    assert.deepEqual(withOutput, []);
  });

  test('a build that is not deterministic is an error naming where the two builds differ', () => {
    let n = 0;
    const job = defineJob({ name: 'clocked', version: '1' }, (env) => void env.fromSequence(1, 10 + n++).print());
    const f = determinismFindings(buildJob(job).spec, () => buildJob(job).spec);
    assert.match(
      only(f, 'nondeterministic-build').message,
      /^the job's build function is not deterministic: two builds gave different graphs \(at operators\[0\]\.options\.to: 10 vs 11\); /,
    );
    assert.equal(only(f, 'nondeterministic-build').code, 'CLINK_ERR_JOB_DEFINITION');
    const steady = defineJob({ name: 'steady', version: '1' }, (env) => void env.fromSequence(1, 10).print());
    assert.deepEqual(
      determinismFindings(buildJob(steady).spec, () => buildJob(steady).spec),
      [],
    );
    assert.equal(firstDifference({ a: [1, { b: 2 }] }, { a: [1, { b: 2, c: 3 }] }), 'a[1].c: absent vs 3');
  });

  test('autoscale bounds: no checkpoint directory is an error; keyed operators above 128 unreachable; a job starting outside the bounds warned of', () => {
    const spec = specOf(
      (env) =>
        env
          .fromSequence(1, 10)
          .keyBy((x) => x % 2)
          .count()
          .uid('counts')
          .collect(),
      { parallelism: 4 },
    );
    assert.equal(
      only(autoscaleFindings({ min: 3, max: 10 }, false, spec), 'autoscale-without-checkpoints').message,
      "--autoscale 3..10 without --checkpoint-dir: a rescale restores from a checkpoint of the job's own; give --checkpoint-dir",
    );
    assert.equal(
      only(autoscaleFindings({ min: 2, max: 256 }, true, spec), 'autoscale-unreachable').message,
      '--autoscale 2..256: keyed operators cannot run above 128 (the key groups); reachable: 2..128',
    );
    assert.match(
      only(autoscaleFindings({ min: 8, max: 16 }, true, spec), 'autoscale-outside').message,
      /^--autoscale 8\.\.16: the job starts at parallelism 4, outside the bounds/,
    );
    assert.deepEqual(autoscaleFindings({ min: 2, max: 8 }, true, spec), []);
  });

  test('findings print as lines with a count, or as one JSON document', () => {
    const f = checkpointSettingsFindings(settings({ intervalMs: 5, checkpointsRetained: 2 }));
    assert.equal(
      formatFindings(f, 'text'),
      'error: --checkpoint-interval-ms 5 needs --checkpoint-dir (where checkpoints go) [interval-without-dir]\nwarning: --checkpoints-retained 2 is ignored without --checkpoint-dir: no checkpoint is taken [retained-without-dir]\nlint: 1 error, 1 warning\n',
    );
    assert.deepEqual(JSON.parse(formatFindings(f, 'json')), {
      ok: false,
      errors: 1,
      warnings: 1,
      findings: [
        {
          severity: 'error',
          check: 'interval-without-dir',
          message: '--checkpoint-interval-ms 5 needs --checkpoint-dir (where checkpoints go)',
        },
        {
          severity: 'warning',
          check: 'retained-without-dir',
          message: '--checkpoints-retained 2 is ignored without --checkpoint-dir: no checkpoint is taken',
        },
      ],
    });
    assert.equal(formatFindings([], 'text'), 'lint: clean\n');
  });
});
