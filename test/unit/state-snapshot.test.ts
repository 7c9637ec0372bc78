import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { KeyGroupRange } from '../../src/plan/index.js';
import { SNAPSHOT_SLICE_MS, type KeyedStateBackend, type BackendSnapshot } from '../../src/state/index.js';
import { stateBackends, type StateBackendTestOptions } from '../helpers.js';

const backends = stateBackends();
after(() => backends.closeAll());

/** Every key's value in a backend, per state name, read through the handles. */
function contents(b: KeyedStateBackend, keys: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    b.setCurrentKey(k);
    out[`v:${String(k)}`] = b.value('v').value();
    out[`m:${String(k)}`] = [...b.map('m').entries()];
    out[`l:${String(k)}`] = b.list('l').get();
  }
  return structuredClone(out);
}

/** What `work` settles to, and how many turns the event loop got meanwhile. */
async function countingTurns<T>(work: Promise<T>): Promise<[T, number]> {
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return [await work, turns];
  } finally {
    ticking = false;
  }
}

for (const type of ['heap', 'disk'] as const) {
  const make = (o?: StateBackendTestOptions): KeyedStateBackend => backends.make(type, o);
  /** A new backend of this type with `snapshot` restored: every test restores into its own type. */
  async function restored(snapshot: BackendSnapshot): Promise<KeyedStateBackend> {
    const b = make();
    await b.restore(snapshot);
    return b;
  }

  describe(`snapshots of the ${type} backend: the state as of the barrier, while records go on`, () => {
    test('a snapshot keeps the values of its barrier while records change, delete, add and mutate state in place', async () => {
      const b = make();
      const keys = Array.from({ length: 2_000 }, (_, i) => `k${i}`);
      for (const k of keys) {
        b.setCurrentKey(k);
        b.value<{ n: number }>('v').update({ n: 1 });
        b.map<string, number>('m').put('a', 1);
        b.list<number>('l').add(1);
      }
      const atBarrier = contents(b, [...keys, 'new']);
      const pending = b.snapshot();
      // Records after the barrier, before the snapshot has encoded anything.
      for (const [i, k] of keys.entries()) {
        b.setCurrentKey(k);
        if (i % 4 === 0) b.value<{ n: number }>('v').value()!.n = 99; // in place, without update()
        if (i % 4 === 1) b.value('v').clear();
        if (i % 4 === 2) b.map<string, number>('m').put('b', 2);
        if (i % 4 === 3) b.list<number>('l').add(2);
      }
      b.setCurrentKey('new');
      b.value('v').update({ n: 7 });
      const afterBarrier = contents(b, [...keys, 'new']);
      assert.notDeepEqual(afterBarrier, atBarrier);

      const snapshot = await pending;
      assert.deepEqual(
        contents(await restored(snapshot), [...keys, 'new']),
        atBarrier,
        'the snapshot is the state at the barrier',
      );
      assert.deepEqual(contents(b, [...keys, 'new']), afterBarrier, 'the live state kept every change');
      assert.deepEqual(
        contents(await restored(await b.snapshot()), [...keys, 'new']),
        afterBarrier,
        'the next snapshot has the changes',
      );
    });

    test('the encoding yields to the event loop once a slice of time is spent: other work runs while 200,000 keys are snapshotted', async () => {
      // A clock that advances 1 ms each time it is read: a slice ends every SNAPSHOT_SLICE_MS reads, on
      // any machine (real time made this depend on how fast the encoding happened to be).
      let t = 0;
      const b = make({ now: () => t++ });
      const v = b.value<number>('v');
      for (let i = 0; i < 200_000; i++) {
        b.setCurrentKey(i);
        v.update(i);
      }
      const [snapshot, turns] = await countingTurns(b.snapshot());
      // One turn of the loop per slice: 128 key groups, one clock read each, a slice every 8 reads.
      assert.ok(
        turns >= Math.floor(128 / SNAPSHOT_SLICE_MS) - 1,
        `the event loop got ${turns} turns during the snapshot`,
      );
      const r = await restored(snapshot);
      r.setCurrentKey(123_456);
      assert.equal(r.value<number>('v').value(), 123_456);
      assert.deepEqual(r.describe(), [{ name: 'v', kind: 'value', keys: 200_000 }]);
    });

    test('a restore loads a group at a time and yields once a slice of time is spent: a job thread restoring millions of keys still ticks', async () => {
      const b = make();
      const v = b.value<number>('v');
      for (let i = 0; i < 200_000; i++) {
        b.setCurrentKey(i);
        v.update(i * 2);
      }
      const snapshot = await b.snapshot();
      let t = 0;
      const r = make({ now: () => t++ });
      const [, turns] = await countingTurns(r.restore(snapshot));
      assert.ok(
        turns >= Math.floor(128 / SNAPSHOT_SLICE_MS) - 1,
        `the event loop got ${turns} turns during the restore`,
      );
      for (const k of [0, 77_777, 199_999]) {
        r.setCurrentKey(k);
        assert.equal(r.value<number>('v').value(), k * 2);
      }
      assert.deepEqual(r.describe(), [{ name: 'v', kind: 'value', keys: 200_000 }]);
    });

    test('a snapshot started before the previous one finished encoding finishes that one first: both are right', async () => {
      const b = make();
      const v = b.value<number>('v');
      const keys = Array.from({ length: 5_000 }, (_, i) => i);
      const put = (x: number): void => {
        for (const k of keys) {
          b.setCurrentKey(k);
          v.update(x);
        }
      };
      put(1);
      const first = b.snapshot();
      put(2);
      const second = b.snapshot();
      put(3);
      const read = async (s: BackendSnapshot): Promise<Set<unknown>> => {
        const r = await restored(s);
        return new Set(keys.map((k) => (r.setCurrentKey(k), r.value('v').value())));
      };
      assert.deepEqual(await read(await first), new Set([1]));
      assert.deepEqual(await read(await second), new Set([2]));
    });

    test('state that cannot be encoded fails the snapshot with the state and operator named, and the live state keeps working', async () => {
      const b = make({ operator: 'counter' });
      b.setCurrentKey('a');
      b.value<unknown>('fn').update({ s: Symbol('not data') });
      await assert.rejects(
        b.snapshot(),
        /state 'fn' of operator 'counter' cannot be (snapshotted|stored): Unknown type: symbol/,
      );
      b.value<unknown>('fn').update(2);
      assert.equal(b.value('fn').value(), 2);
      assert.equal((await b.snapshot()).length, 1);
    });

    test("state names starting with '__' are the engine's (window panes, timers) and refused to user code", () => {
      const b = make();
      assert.throws(
        () => b.value('__pane:0'),
        /state '__pane:0' of operator 'op': names starting with '__' are the engine's; choose another name/,
      );
      b.internalTable('__timers:event');
      assert.deepEqual(b.describe(), [], 'engine tables are not listed as user state');
    });

    test('a restore keeps only the key groups of its range', async () => {
      const b = make();
      for (let i = 0; i < 1_000; i++) {
        b.setCurrentKey(i);
        b.value<number>('v').update(i);
      }
      const snapshot = await b.snapshot();
      const halves = await Promise.all(
        [0, 1].map(async (i) => {
          const r = make({ range: KeyGroupRange.forSubtask(i, 2) });
          await r.restore(snapshot);
          return r.describe()[0]!.keys;
        }),
      );
      assert.equal(halves[0]! + halves[1]!, 1_000);
      assert.ok(halves[0]! > 0 && halves[1]! > 0);
    });
  });
}
