// State schema evolution: which declared schema reads which checkpointed one, the restore gate's refusal
// at submit, and a restore that migrates or refuses on both backends.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { checkRestore, identityOf } from '../../src/coordinator/index.js';
import { createPhysicalPlan, stateRestoreVerdict, type StateDeclarationSpec } from '../../src/plan/index.js';
import {
  buildJob,
  defineJob,
  Schema,
  States,
  type KeyedProcessOptions,
  type StateDeclaration,
} from '../../src/sdk/index.js';
import { stateBackends } from '../helpers.js';

const backends = stateBackends();
after(() => backends.closeAll());

const spec = (d: StateDeclaration): StateDeclarationSpec => ({
  kind: d.kind,
  schema: d.schema,
  ...(d.key ? { key: d.key } : {}),
  ...(d.migrate ? { migrateFrom: d.migrate.from } : {}),
});
const verdict = (stored: StateDeclaration, declared: StateDeclaration): string => {
  const v = stateRestoreVerdict(spec(stored), spec(declared));
  return 'refuse' in v ? `refuse: ${v.refuse}` : v.restore;
};

describe('state schema compatibility', () => {
  const user = Schema.object({ id: Schema.int(), name: Schema.string() });
  test('compatible changes restore as stored: the same, int to number, a field added optional or removed, any', () => {
    assert.equal(verdict(States.value(user), States.value(user)), 'as-stored');
    assert.equal(verdict(States.value(Schema.int()), States.value(Schema.number())), 'as-stored');
    assert.equal(
      verdict(
        States.value(user),
        States.value(
          Schema.object({ id: Schema.number(), name: Schema.string(), email: Schema.optional(Schema.string()) }),
        ),
      ),
      'as-stored',
    );
    assert.equal(verdict(States.value(user), States.value(Schema.object({ id: Schema.int() }))), 'as-stored');
    assert.equal(verdict(States.list(Schema.int()), States.list(Schema.optional(Schema.number()))), 'as-stored');
    assert.equal(verdict(States.map(Schema.string(), user), States.map(Schema.string(), Schema.any())), 'as-stored');
  });

  test('incompatible changes are refused naming both schemas and where they differ', () => {
    assert.equal(
      verdict(States.value(Schema.int()), States.value(Schema.string())),
      'refuse: it was checkpointed as int and is declared as string (int cannot be read as string)',
    );
    assert.equal(
      verdict(
        States.value(user),
        States.value(Schema.object({ id: Schema.int(), name: Schema.string(), age: Schema.int() })),
      ),
      'refuse: it was checkpointed as {id: int, name: string} and is declared as {id: int, name: string, age: int} (age: a field added as required (values stored before have none); declare it optional)',
    );
    assert.match(verdict(States.value(Schema.number()), States.value(Schema.int())), /number cannot be read as int/);
    assert.match(
      verdict(States.value(Schema.optional(Schema.int())), States.value(Schema.int())),
      /a value that may be absent is declared as always present/,
    );
    assert.match(
      verdict(States.value(Schema.int()), States.list(Schema.int())),
      /checkpointed as a value state and is declared as a list state/,
    );
    assert.match(
      verdict(States.map(Schema.string(), Schema.int()), States.map(Schema.int(), Schema.int())),
      /its keys changed: <key>: string cannot be read as int/,
    );
  });

  test('a migration from exactly the stored schema restores through it; from another, it is refused', () => {
    const fn = (old: unknown): unknown => String(old);
    assert.equal(
      verdict(States.value(Schema.int()), States.value(Schema.string(), { migrate: { from: Schema.int(), fn } })),
      'migrate',
    );
    assert.match(
      verdict(States.value(Schema.number()), States.value(Schema.string(), { migrate: { from: Schema.int(), fn } })),
      /its migration converts from int, not from that/,
    );
  });

  test('a declaration that is not one is refused when the job is built, naming the state', () => {
    const job = (states: Record<string, StateDeclaration>) =>
      buildJob(
        defineJob({ name: 'j', version: '1' }, (env) =>
          env
            .fromSequence(1, 3)
            .keyBy((x) => x)
            .process({ processElement() {} }, { states })
            .collect(),
        ),
      );
    assert.throws(() => job({ n: { kind: 'value', schema: { type: 'float' } as never } }), {
      code: 'CLINK_ERR_JOB_DEFINITION',
      message: /process\(\): state 'n' is declared wrong: schema has type 'float', not one of int, number/,
    });
    assert.throws(() => job({ __n: States.value(Schema.int()) }), /state '__n' has a name starting with '__'/);
  });
});

/** A keyed job counting per key with its state declared as `states`. */
const countingJob = (options: KeyedProcessOptions) =>
  createPhysicalPlan(
    buildJob(
      defineJob({ name: 'counts', version: '1' }, (env) =>
        env
          .fromSequence(1, 100)
          .keyBy((x) => x % 7)
          .process<number>({ processElement() {} }, options)
          .uid('counter')
          .name('counter')
          .collect(),
      ),
      { parallelism: 2 },
    ).spec,
  );

describe('the restore gate on declared state', () => {
  const checkpointOf = (p: ReturnType<typeof countingJob>) => ({
    checkpointId: 9,
    subtasks: p.subtasks.map((s) => `${s.taskId}#${s.index}`),
    identity: identityOf(p, 'counts'),
  });

  test('an incompatible schema is refused at submit in one line naming the operator, the state and both schemas', () => {
    const before = countingJob({ states: { count: States.value(Schema.int()) } });
    const after = countingJob({ states: { count: States.value(Schema.string()) } });
    assert.throws(() => checkRestore(checkpointOf(before), after, 'counts', false), {
      code: 'CLINK_ERR_STATE',
      message:
        "restore refused: checkpoint 9 holds state this job reads differently: operator 'counter' state 'count': it was checkpointed as int and is declared as string (int cannot be read as string); declare a schema its values read as, or a migration from the stored one (States.value(schema, { migrate: { from, fn } }))",
    });
  });

  test('a compatible schema, a migration, a new state and a checkpoint without declarations are accepted', () => {
    const before = countingJob({ states: { count: States.value(Schema.int()) } });
    for (const after of [
      countingJob({ states: { count: States.value(Schema.number()), extra: States.list(Schema.string()) } }),
      countingJob({
        states: { count: States.value(Schema.string(), { migrate: { from: Schema.int(), fn: String } }) },
      }),
    ])
      assert.equal(checkRestore(checkpointOf(before), after, 'counts', false).restoredOperators > 0, true);
    const undeclared = countingJob({});
    assert.ok(checkRestore(checkpointOf(undeclared), before, 'counts', false));
  });
});

for (const type of ['heap', 'disk'] as const) {
  describe(`restoring declared state on the ${type} backend`, () => {
    test('a migration converts every value (TTL stamps and map values too); an undeclared change is refused; kinds are kept', async () => {
      const old = backends.make(type);
      old.declare('n', { kind: 'value', schema: Schema.int() });
      old.declare('m', { kind: 'map', key: Schema.string(), schema: Schema.int() });
      for (let k = 0; k < 50; k++) {
        old.setCurrentKey(k);
        old.value<number>('n', { ttl: { ttlMs: 60_000 } }).update(k);
        old.map<string, number>('m').put('a', k);
      }
      const snapshot = await old.snapshot();
      assert.deepEqual(
        snapshot.map((s) => s.declared?.schema),
        [Schema.int(), Schema.int()],
      );

      const migrated = backends.make(type);
      migrated.declare(
        'n',
        { kind: 'value', schema: Schema.string(), migrateFrom: Schema.int() },
        (v) => `#${String(v)}`,
      );
      migrated.declare('m', { kind: 'map', key: Schema.string(), schema: Schema.number() });
      await migrated.restore(snapshot);
      for (const k of [0, 17, 49]) {
        migrated.setCurrentKey(k);
        assert.equal(migrated.value<string>('n', { ttl: { ttlMs: 60_000 } }).value(), `#${k}`);
        assert.equal(migrated.map<string, number>('m').get('a'), k);
      }
      assert.throws(
        () => migrated.list('m'),
        /state 'm' of operator 'op' is declared as a map state, not a list state/,
      );

      const refused = backends.make(type);
      refused.declare('n', { kind: 'value', schema: Schema.boolean() });
      await assert.rejects(refused.restore(snapshot), {
        code: 'CLINK_ERR_STATE',
        message: /state 'n' of operator 'op' cannot be restored: it was checkpointed as int and is declared as boolean/,
      });
    });
  });
}
