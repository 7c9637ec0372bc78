// Every built-in connector's declared capabilities against what the planner and the gates do with
// them: named by string or passed as an object, a source that cannot run in parallel is planned at 1,
// options are checked at build, a sink that numbers records by position is refused where a replay
// would not repeat their order.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BUILTIN_CAPABILITIES, builtinConnectors, connectorRescaleRefusal } from '../../src/connectors/index.js';
import { connectorFindings, jobGraphFindings } from '../../src/lint/index.js';
import { createPhysicalPlan, type JobGraphSpec } from '../../src/plan/index.js';
import { buildJob, defineJob, type Connector, type JobEnvironment } from '../../src/sdk/index.js';

/** Options each source and sink accepts (no server is reached while planning). */
const VALID: Record<string, { source?: Record<string, unknown>; sink?: Record<string, unknown> }> = {
  blackhole: { sink: {} },
  datagen: { source: { count: 10 } },
  file: { source: { path: '/tmp/in' }, sink: { path: '/tmp/out' } },
  kafka: {
    source: { bootstrapServers: '127.0.0.1:9092', topic: 't' },
    sink: { bootstrapServers: '127.0.0.1:9092', topic: 't' },
  },
  nats: {
    source: { servers: '127.0.0.1:4222', stream: 'S' },
    sink: { servers: '127.0.0.1:4222', subject: 'out', messageIdPrefix: 'p', messageIdField: 'id' },
  },
  nexmark: { source: { events: 10 } },
  postgres: {
    source: { connectionString: 'postgres://h/db', table: 't' },
    sink: { connectionString: 'postgres://h/db', table: 't' },
  },
  print: { sink: {} },
  sequence: { source: { from: 1, to: 10 } },
};

const connectors = builtinConnectors(() => undefined);

function spec(build: (env: JobEnvironment) => void, parallelism = 4): JobGraphSpec {
  return buildJob(defineJob({ name: 'audit', version: '1' }, build), { parallelism }).spec;
}

const parallelismOf = (s: JobGraphSpec, type: string): number => s.operators.find((o) => o.type === type)!.parallelism;

describe('connector capabilities, audited per connector', () => {
  test('every built-in connector has declared capabilities and valid options here', () => {
    assert.deepEqual(BUILTIN_CAPABILITIES.map((c) => c.name).sort(), [...connectors.keys()].sort());
    assert.deepEqual(Object.keys(VALID).sort(), [...connectors.keys()].sort());
  });

  for (const cap of BUILTIN_CAPABILITIES) {
    const connector = connectors.get(cap.name)! as Connector;
    test(`${cap.name}: its declared sides are the sides it has`, () => {
      assert.equal(cap.source !== undefined, connector.source !== undefined);
      assert.equal(cap.sink !== undefined, connector.sink !== undefined);
    });
    if (cap.source) {
      const options = VALID[cap.name]!.source!;
      test(`${cap.name} source: planned at ${cap.source.parallel ? 'the job parallelism' : '1'}, by name and as an object alike`, () => {
        assert.equal(cap.source!.parallel, connector.parallelSource !== false);
        const want = cap.source!.parallel ? 4 : 1;
        const byName = spec((env) => env.fromSource(cap.name, options).sinkTo('blackhole'));
        const byObject = spec((env) => env.fromSource(connector, options).sinkTo('blackhole'));
        assert.equal(parallelismOf(byName, 'source'), want);
        assert.equal(parallelismOf(byObject, 'source'), want);
        assert.deepEqual(errorsIn(byName), []);
        assert.equal(
          createPhysicalPlan(byName).tasks.find((t) => t.operators[0]!.type === 'source')!.parallelism,
          want,
        );
      });
      test(`${cap.name} source: rescalable exactly when its factory divides positions`, () => {
        const op = spec((env) => env.fromSource(cap.name, options).sinkTo('blackhole')).operators[0]!;
        assert.equal(connectorRescaleRefusal(op) === undefined, connector.source!.rescale !== undefined);
      });
      test(`${cap.name} source: an unknown option is refused when the job is built, naming it`, () => {
        assert.throws(
          () => spec((env) => env.fromSource(cap.name, { ...options, bogusOption: 1 }).sinkTo('blackhole')),
          /unknown key "bogusOption"/,
        );
      });
    }
    if (cap.sink) {
      const options = VALID[cap.name]!.sink!;
      test(`${cap.name} sink: an unknown option is refused when the job is built, naming it`, () => {
        assert.throws(
          () => spec((env) => env.fromSource('datagen', { count: 1 }).sinkTo(cap.name, { ...options, bogusOption: 1 })),
          /unknown key "bogusOption"/,
        );
      });
      test(`${cap.name} sink: rescalable exactly when its factory says so`, () => {
        const op = spec((env) => env.fromSource('datagen', { count: 1 }).sinkTo(cap.name, options)).operators.find(
          (o) => o.type === 'sink',
        )!;
        assert.equal(connectorRescaleRefusal(op) === undefined, connector.sink!.rescalable === true);
      });
    }
  }
});

function errorsIn(s: JobGraphSpec): string[] {
  return jobGraphFindings(s, { checkpointing: true, regionRetries: 0 })
    .filter((f) => f.severity === 'error')
    .map((f) => f.message);
}

describe('a sink that numbers its messages by position', () => {
  const natsSink = { servers: '127.0.0.1:4222', subject: 'out', messageIdPrefix: 'p' };
  const natsSource = { servers: '127.0.0.1:4222', stream: 'S' };

  test('is refused where its input merges channels or is rebalanced, naming messageIdField', () => {
    const rebalanced = spec((env) =>
      env
        .fromSource('nats', natsSource)
        .map((x) => x)
        .sinkTo('nats', natsSink),
    );
    const f = connectorFindings(rebalanced, createPhysicalPlan(rebalanced));
    assert.equal(f.length, 1);
    assert.equal(f[0]!.check, 'sink-input-order');
    assert.match(
      f[0]!.message,
      /^sink '_inline_nats_0' \(connector nats\) names each record by its position .*\(task '_inline_map_0 -> _inline_nats_0' is fed by a REBALANCE edge from '_inline_source_0'\)/,
    );
    assert.match(f[0]!.message, /set messageIdField to a field unique per record/);
    const merged = spec((env) =>
      env
        .fromSource('datagen', { count: 9 })
        .keyBy((x) => x)
        .map((x) => x)
        .sinkTo('nats', natsSink),
    );
    assert.match(connectorFindings(merged, createPhysicalPlan(merged))[0]!.message, /merges 4 input channels/);
  });

  test('is accepted with messageIdField, or where one ordered input reaches it', () => {
    const withIds = spec((env) =>
      env
        .fromSource('nats', natsSource)
        .map((x) => x)
        .sinkTo('nats', { ...natsSink, messageIdField: 'id' }),
    );
    assert.deepEqual(connectorFindings(withIds, createPhysicalPlan(withIds)), []);
    const chained = spec(
      (env) =>
        env
          .fromSource('nats', natsSource)
          .map((x) => x)
          .sinkTo('nats', natsSink),
      1,
    );
    assert.deepEqual(connectorFindings(chained, createPhysicalPlan(chained)), []);
    const keyedFromOne = spec((env) =>
      env
        .fromSource('nats', natsSource)
        .keyBy((x) => String(x))
        .map((x) => x)
        .sinkTo('nats', natsSink),
    );
    assert.deepEqual(
      connectorFindings(keyedFromOne, createPhysicalPlan(keyedFromOne)),
      [],
      'one upstream subtask, hashed: the same order on replay',
    );
  });
});

describe('a graph built without the SDK (--graph-json)', () => {
  test('a non-parallel source planned above 1 is refused, naming it', () => {
    const s = spec((env) => env.fromSource('nats', { servers: 'h:1', stream: 'S' }).sinkTo('blackhole'));
    const forced: JobGraphSpec = {
      ...s,
      operators: s.operators.map((o) =>
        o.type === 'source' ? { ...o, parallelism: 4, options: { connector: 'nats', servers: 'h:1', stream: 'S' } } : o,
      ),
    };
    const f = connectorFindings(forced, undefined);
    assert.deepEqual(
      f.map((x) => x.check),
      ['source-not-parallel'],
    );
    assert.match(f[0]!.message, /runs at parallelism 1 only, but is planned at 4/);
  });

  test('options a connector does not know are refused, naming the closest known one', () => {
    const s = spec((env) => env.fromSource('datagen', { count: 1 }).sinkTo('file', { path: '/tmp/x' }));
    const bad: JobGraphSpec = {
      ...s,
      operators: s.operators.map((o) =>
        o.type === 'sink' ? { ...o, options: { connector: 'file', pth: '/tmp/x' } } : o,
      ),
    };
    const f = connectorFindings(bad, undefined);
    assert.equal(f[0]!.check, 'connector-options');
    assert.match(f[0]!.message, /unknown key "pth" \(did you mean "path"\?\)/);
  });
});
