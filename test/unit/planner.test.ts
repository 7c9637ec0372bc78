import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildJob, defineJob, PlanError, runJob, Windows } from '../../src/index.js';
import { createPhysicalPlan, withoutUnchainablePreAggregation, type JobGraphSpec } from '../../src/plan/index.js';
import type { JobEnvironment } from '../../src/sdk/index.js';

const job = (build: (env: JobEnvironment) => void) => defineJob({ name: 'plan-test', version: '1' }, build);

function pipeline(env: JobEnvironment): void {
  env
    .fromSequence(1, 10)
    .map((x) => x + 1)
    .filter((x) => x % 2 === 0)
    .keyBy((x) => x % 3)
    .sum()
    .map((x) => x * 2)
    .print();
}

describe('the plan', () => {
  test('inline operators get deterministic ids in declaration order, per type', () => {
    const { spec } = buildJob(job(pipeline));
    assert.deepEqual(
      spec.operators.map((o) => o.id),
      [
        '_inline_source_0',
        '_inline_map_0',
        '_inline_filter_0',
        '_inline_keyedReduce_0',
        '_inline_map_1',
        '_inline_print_0',
      ],
    );
  });

  test('the same module built twice yields the same plan', () => {
    const a = buildJob(job(pipeline), { parallelism: 3 }).spec;
    const b = buildJob(job(pipeline), { parallelism: 3 }).spec;
    assert.equal(JSON.stringify(a), JSON.stringify(b));
    // and it is plain JSON
    assert.deepEqual(JSON.parse(JSON.stringify(a)), a);
  });

  test('edges carry their kind: forward inside a pipeline, hash after keyBy', () => {
    const { spec } = buildJob(job(pipeline), { parallelism: 2 });
    assert.deepEqual(
      spec.edges.map((e) => e.kind),
      ['FORWARD', 'FORWARD', 'HASH', 'FORWARD', 'FORWARD'],
    );
  });

  test('forward edges of equal parallelism chain into one task; keyBy starts a new one', () => {
    const plan = createPhysicalPlan(buildJob(job(pipeline), { parallelism: 2 }).spec);
    assert.deepEqual(
      plan.tasks.map((t) => t.operators.map((o) => o.type)),
      [
        ['source', 'map', 'filter'],
        ['keyedReduce', 'map', 'sink'],
      ],
    );
    assert.equal(plan.subtasks.length, 4);
  });

  test('a parallelism change turns the default edge into a rebalance and breaks the chain', () => {
    const { spec } = buildJob(
      job((env) => {
        env
          .fromSequence(1, 10)
          .map((x) => x)
          .setParallelism(3)
          .print()
          .setParallelism(1);
      }),
      { parallelism: 2 },
    );
    assert.deepEqual(
      spec.edges.map((e) => e.kind),
      ['REBALANCE', 'REBALANCE'],
    );
    assert.equal(createPhysicalPlan(spec).tasks.length, 3);
  });

  test('startNewChain and disableChaining split chains', () => {
    const spec = buildJob(
      job((env) => {
        const s = env
          .fromSequence(1, 10)
          .map((x) => x)
          .startNewChain()
          .filter(() => true)
          .map((x) => x)
          .disableChaining();
        s.map((x) => x).print();
      }),
    ).spec;
    const tasks = createPhysicalPlan(spec).tasks.map((t) => t.operators.map((o) => o.id));
    assert.deepEqual(tasks, [
      ['_inline_source_0'],
      ['_inline_map_0', '_inline_filter_0'],
      ['_inline_map_1'],
      ['_inline_map_2', '_inline_print_0'],
    ]);
  });

  test('name() labels an operator and uid() replaces its id', () => {
    const { spec } = buildJob(
      job((env) =>
        env
          .fromSequence(1, 2)
          .map((x) => x)
          .name('double')
          .uid('double-v1')
          .print(),
      ),
    );
    const op = spec.operators[1]!;
    assert.equal(op.name, 'double');
    assert.equal(op.id, 'double-v1');
    assert.equal(spec.edges[0]!.target, 'double-v1');
  });

  test('a keyed operator with parallelism above 128 is refused, naming the operator', () => {
    const spec = buildJob(
      job((env) =>
        env
          .fromSequence(1, 2)
          .keyBy((x) => x)
          .count()
          .name('big count')
          .setParallelism(129)
          .print(),
      ),
    ).spec;
    assert.throws(
      () => createPhysicalPlan(spec),
      (e: unknown) => e instanceof PlanError && /keyed operator 'big count' has parallelism 129/.test(e.message),
    );
  });

  test('an explicit forward edge between different parallelisms is refused', () => {
    const spec = buildJob(
      job((env) =>
        env
          .fromSequence(1, 2)
          .forward()
          .map((x) => x)
          .name('m')
          .setParallelism(2)
          .print(),
      ),
    ).spec;
    assert.throws(
      () => createPhysicalPlan(spec),
      /forward edge from '_inline_source_0' \(parallelism 1\) to 'm' \(parallelism 2\)/,
    );
  });

  test('a job with no sink is refused', () => {
    const spec = buildJob(job((env) => void env.fromSequence(1, 2).map((x) => x))).spec;
    assert.throws(() => createPhysicalPlan(spec), /job has no sink/);
  });

  test('fromElements is not parallel: parallelism above 1 is refused', () => {
    const spec = buildJob(job((env) => env.fromElements([1]).setParallelism(2).print())).spec;
    assert.throws(() => createPhysicalPlan(spec), /'_inline_source_0' is not parallel and must have parallelism 1/);
  });

  test('a malformed spec is refused with the path of each problem', () => {
    const spec = buildJob(job(pipeline)).spec;
    const bad = {
      ...spec,
      operators: [{ ...spec.operators[0]!, parallelism: 0 }, ...spec.operators.slice(1)],
    } as JobGraphSpec;
    assert.throws(
      () => createPhysicalPlan(bad),
      /operator '_inline_source_0' \(the sequence source\) parallelism: expected >= 1, got 0/,
    );
    const badEdge = {
      ...spec,
      edges: [...spec.edges, { source: 'nope', target: spec.operators[1]!.id, kind: 'FORWARD', inputIndex: 0 }],
    } as JobGraphSpec;
    assert.throws(() => createPhysicalPlan(badEdge), /unknown operator 'nope'/);
  });

  test('a duplicate uid is refused at declaration', () => {
    assert.throws(
      () =>
        buildJob(
          job((env) => {
            env
              .fromSequence(1, 2)
              .uid('same')
              .map((x) => x)
              .uid('same')
              .print();
          }),
        ),
      /uid 'same' is already used/,
    );
  });

  test('a build function that throws is reported with the job name', () => {
    assert.throws(
      () =>
        buildJob(
          job(() => {
            throw new Error('no config');
          }),
        ),
      /job 'plan-test': build function threw: no config/,
    );
  });

  test('two-input operators declare both inputs', () => {
    const spec = buildJob(
      job((env) => {
        const a = env.fromElements([1]);
        const b = env.fromElements(['x']);
        a.connect(b)
          .keyBy(
            (x) => String(x),
            (y) => y,
          )
          .process({ processElement1() {}, processElement2() {} })
          .print();
      }),
    ).spec;
    const co = spec.operators.find((o) => o.type === 'coProcess')!;
    assert.equal(co.inputs, 2);
    assert.deepEqual(
      spec.edges.filter((e) => e.target === co.id).map((e) => [e.kind, e.inputIndex]),
      [
        ['HASH', 0],
        ['HASH', 1],
      ],
    );
  });

  test('a window count, reduce or mergeable aggregate is pre-aggregated in the upstream chain; process, session and unmergeable windows are not', () => {
    const plan = (build: (env: JobEnvironment) => void) =>
      createPhysicalPlan(buildJob(job(build), { parallelism: 2 }).spec);
    const counted = plan((env) =>
      env
        .fromSequence(1, 10)
        .map((x) => x)
        .keyBy((x) => x % 3)
        .window(Windows.tumbling(10))
        .count()
        .collect(),
    );
    const local = counted.spec.operators.find((o) => o.type === 'localWindowAggregate')!;
    assert.ok(local, 'a pre-aggregation operator');
    assert.equal(local.parallelism, 2);
    assert.deepEqual(
      counted.tasks.map((t) => t.operators.map((o) => o.type)),
      [
        ['source', 'map', 'localWindowAggregate'],
        ['window', 'sink'],
      ],
      'chained into the upstream task: no extra task, no extra channel',
    );
    const sourceAtOne = plan((env) =>
      env
        .fromSequence(1, 10)
        .setParallelism(1)
        .keyBy((x) => x)
        .window(Windows.sliding(10, 5))
        .reduce((a, b) => a + b)
        .collect(),
    );
    assert.equal(
      sourceAtOne.spec.operators.find((o) => o.type === 'localWindowAggregate')!.parallelism,
      1,
      'at its upstream’s parallelism',
    );
    // Where the upstream feeds another operator too, a pre-aggregation could not chain: it is left out.
    const shared = plan((env) => {
      const xs = env.fromSequence(1, 10).map((x) => x);
      xs.keyBy((x) => x % 3)
        .window(Windows.tumbling(10))
        .count()
        .collect('a');
      xs.collect('b');
    });
    assert.equal(
      shared.spec.operators.some((o) => o.type === 'localWindowAggregate'),
      false,
    );
    assert.equal(shared.spec.operators.find((o) => o.type === 'window')!.options.preAggregated, undefined);
    for (const build of [
      (env: JobEnvironment) =>
        env
          .fromSequence(1, 10)
          .keyBy((x) => x)
          .window(Windows.session(10))
          .count()
          .collect(),
      (env: JobEnvironment) =>
        env
          .fromSequence(1, 10)
          .keyBy((x) => x)
          .window(Windows.tumbling(10))
          .process({ process: () => {} })
          .collect(),
      (env: JobEnvironment) =>
        env
          .fromSequence(1, 10)
          .keyBy((x) => x)
          .window(Windows.tumbling(10))
          .aggregate({ create: () => 0, add: (x: number, a: number) => a + x, result: (a) => a })
          .collect(),
    ]) {
      assert.equal(
        plan(build).spec.operators.some((o) => o.type === 'localWindowAggregate'),
        false,
      );
    }
  });
});

describe("pre-aggregation pruning follows the planner's chaining rule", () => {
  test('a pre-aggregation whose edge would not chain is dropped, its window fed directly with its own key again', () => {
    const { spec } = buildJob(
      job((env) =>
        env
          .fromSequence(1, 10)
          .map((x) => x)
          .keyBy((x) => x % 3)
          .window(Windows.tumbling(10))
          .count()
          .collect(),
      ),
      { parallelism: 2 },
    );
    const local = spec.operators.find((o) => o.type === 'localWindowAggregate')!;
    const window = spec.operators.find((o) => o.type === 'window')!;
    assert.deepEqual(withoutUnchainablePreAggregation(spec), { spec, fedDirectly: new Map() }, 'it chains: kept');
    const map = spec.edges.find((e) => e.target === local.id)!.source;
    const refusing = {
      ...spec,
      operators: spec.operators.map((o) => (o.id === map ? { ...o, chaining: 'NEVER' as const } : o)),
    };
    const pruned = withoutUnchainablePreAggregation(refusing);
    assert.deepEqual(pruned.fedDirectly, new Map([[window.id, local.id]]));
    assert.equal(
      pruned.spec.operators.some((o) => o.id === local.id),
      false,
    );
    assert.deepEqual(
      pruned.spec.edges.find((e) => e.target === window.id),
      { source: map, target: window.id, kind: 'HASH', inputIndex: 0 },
    );
    assert.equal(pruned.spec.operators.find((o) => o.id === window.id)!.options.preAggregated, undefined);
    assert.doesNotThrow(() => createPhysicalPlan(pruned.spec));
  });

  test('a window whose pre-aggregation was dropped counts the raw records by the key the job gave', async () => {
    const shared = job((env) => {
      const xs = env.fromSequence(0, 29).assignTimestamps((x) => x);
      xs.keyBy((x) => x % 3)
        .window(Windows.tumbling(1_000))
        .count()
        .collect('counts');
      xs.collect('all');
    });
    assert.equal(
      buildJob(shared, { parallelism: 2 }).spec.operators.some((o) => o.type === 'localWindowAggregate'),
      false,
    );
    const result = await runJob(shared, { parallelism: 2 });
    assert.deepEqual(
      (result.collected.counts as { key: number; count: number }[]).map((c) => [c.key, c.count]).sort(),
      [
        [0, 10],
        [1, 10],
        [2, 10],
      ],
    );
    assert.equal(result.collected.all!.length, 30);
  });
});

describe('slot sharing groups', () => {
  test('an operator takes its inputs’ group unless it names one; chains never cross groups', () => {
    const plan = createPhysicalPlan(
      buildJob(
        job((env) => {
          const a = env
            .fromSequence(1, 10)
            .map((x) => x)
            .slotSharingGroup('heavy')
            .filter(() => true);
          a.print().slotSharingGroup('sinks');
        }),
      ).spec,
    );
    assert.deepEqual(
      plan.tasks.map((t) => [t.name, t.slotSharingGroup]),
      [
        ['_inline_source_0', 'default'],
        ['_inline_map_0 -> _inline_filter_0', 'heavy'],
        ['_inline_print_0', 'sinks'],
      ],
    );
    assert.throws(
      () => buildJob(job((env) => void env.fromSequence(1, 2).slotSharingGroup('').print())),
      /slotSharingGroup\(\) expects a name of 1 to 128 characters, got ""/,
    );
  });
});
