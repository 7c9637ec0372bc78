/**
 * NumberTable (a window's counts: an open-addressing table of numbers per key group under integer keys)
 * and the flat group encoding it is snapshotted in: it behaves as a Map through growth, a snapshot keeps
 * its barrier's values while the table changes and restores into a backend, and the encoding
 * round-trips any integer keys and numbers, as narrow as they allow.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { KeyGroupRange } from '../../src/plan/index.js';
import { decodeNumberGroup, isNumberTableKey, KeyedStateBackend, NumberTable } from '../../src/state/index.js';
import { encodeNumberGroup } from '../../src/state/group-codec.js';

const all = KeyGroupRange.forSubtask(0, 1);

/** Every key group's entries, sorted by key. */
function entriesOf(t: NumberTable): [number, number, number][] {
  const out: [number, number, number][] = [];
  t.groups.forEach((g, kg) => g?.forEach((v, k) => out.push([kg, k, v])));
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function decoded(bytes: Uint8Array): [number, number][] {
  const out: [number, number][] = [];
  decodeNumberGroup(bytes, (k, v) => out.push([k, v]));
  return out;
}

describe('NumberTable', () => {
  test('a group holds what a Map would through inserts, updates and growth', () => {
    const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof(int32, fc.integer({ min: -50, max: 50 })), fc.double()), { maxLength: 400 }),
        (ops) => {
          const g = new NumberTable(1).group(0);
          const model = new Map<number, number>();
          for (const [k, v] of ops) {
            const at = g.indexOf(k);
            assert.equal(at >= 0, model.has(k), `key ${k} held`);
            if (at >= 0) g.pairs[at] = v;
            else g.insert(k, v);
            model.set(k, v);
          }
          const held = new Map<number, number>();
          g.forEach((v, k) => held.set(k, v));
          assert.equal(g.size, model.size);
          assert.deepEqual(held, model);
          for (const [k, v] of model) assert.ok(Object.is(g.pairs[g.indexOf(k)], v));
        },
      ),
    );
  });

  test('holds 32-bit integer keys only (-0 as 0, as a Map does)', () => {
    assert.deepEqual([0, -0, 7, -(2 ** 31), 2 ** 31 - 1].map(isNumberTableKey), [true, true, true, true, true]);
    assert.deepEqual([0.5, 2 ** 31, NaN, '1', null, 1n].map(isNumberTableKey), [
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    const g = new NumberTable(1).group(0);
    g.insert(-0, 1);
    assert.ok(g.indexOf(0) >= 0);
  });

  test('a snapshot holds the values and keys of its barrier while values change and keys are added, and a second one waits for nothing', async () => {
    // A clock that advances 1 ms a read: encoding yields to the event loop every few groups.
    let now = 0;
    const b = new KeyedStateBackend(all, 'op', undefined, () => now++);
    const t = b.internalNumberTable('__counts');
    const write = (k: number, v: number): void => {
      const g = t.group(k % 128);
      const at = g.indexOf(k * 7919);
      if (at >= 0) g.pairs[at] = v;
      else g.insert(k * 7919, v);
    };
    for (let k = 0; k < 5_000; k++) write(k, k % 3);
    const atFirst = entriesOf(t);
    const first = b.snapshot();
    // Between slices, as records would: half the groups change (and grow) before most are encoded; the
    // other half change only once a second snapshot has begun.
    await new Promise((r) => setImmediate(r));
    for (let k = 0; k < 6_000; k++) if (k % 128 < 64) write(k, -1);
    const atSecond = entriesOf(t);
    const second = b.snapshot();
    for (let k = 0; k < 7_000; k++) write(k, -2);
    const restored = async (s: Awaited<typeof first>): Promise<[number, number, number][]> => {
      const r = new KeyedStateBackend(all, 'op');
      await r.restore(s);
      return entriesOf(r.internalNumberTable('__counts'));
    };
    assert.deepEqual(await restored(await first), atFirst);
    assert.deepEqual(await restored(await second), atSecond);
    assert.equal(t.size, 7_000);
  });

  test("a dropped table's groups serve the next table empty, with the room they grew to; bounded", () => {
    const b = new KeyedStateBackend(all, 'op');
    const first = b.internalNumberTable('__pane:1');
    for (let k = 0; k < 1_000; k++) first.group(5).insert(k, k);
    for (let k = 0; k < 3; k++) first.group(6).insert(k, k);
    const grown = first.group(5).pairs;
    b.dropInternalTable('__pane:1');
    assert.equal(first.size, 0, 'a dropped table holds nothing');
    const next = b.internalNumberTable('__pane:2');
    const g = next.group(5);
    assert.equal(g.pairs, grown, 'the same room, not a new one');
    assert.equal(g.size, 0);
    assert.equal(g.indexOf(7), -1);
    g.insert(7, 1);
    assert.deepEqual(entriesOf(next), [[5, 7, 1]]);
    // A group that held few keys in much room (8 times and more) is not kept.
    const sparse = b.internalNumberTable('__pane:3');
    for (let k = 0; k < 1_000; k++) sparse.group(9).insert(k, k);
    const big = sparse.group(9).pairs;
    b.dropInternalTable('__pane:3');
    const refill = b.internalNumberTable('__pane:4');
    refill.group(9).insert(1, 1);
    b.dropInternalTable('__pane:4');
    assert.notEqual(
      b.internalNumberTable('__pane:5').group(9).pairs,
      big,
      'kept while it was full enough; not once nearly empty',
    );
    // At most two spare groups per key group.
    const tables = [6, 7, 8].map((i) => b.internalNumberTable(`__many:${i}`));
    for (const t of tables) t.group(11).insert(1, 1);
    const rooms = tables.map((t) => t.group(11).pairs);
    for (const i of [6, 7, 8]) b.dropInternalTable(`__many:${i}`);
    const again = [1, 2, 3].map((i) => b.internalNumberTable(`__again:${i}`).group(11).pairs);
    assert.equal(again.filter((p) => rooms.includes(p)).length, 2);
  });

  test('a table dropped while a snapshot encodes it keeps its values for the snapshot; its groups are not reused', async () => {
    let now = 0;
    const b = new KeyedStateBackend(all, 'op', undefined, () => now++);
    const t = b.internalNumberTable('__pane:1');
    for (let k = 0; k < 5_000; k++) t.group(k % 128).insert(k, k % 7);
    const atBarrier = entriesOf(t);
    const snapshot = b.snapshot();
    b.dropInternalTable('__pane:1');
    // The next pane writes into groups of its own meanwhile.
    const next = b.internalNumberTable('__pane:2');
    for (let k = 0; k < 5_000; k++) next.group(k % 128).insert(k + 1, -1);
    for (const [kg, g] of next.groups.entries()) if (g) assert.notEqual(g, t.groups[kg]);
    const r = new KeyedStateBackend(all, 'op');
    await r.restore(await snapshot);
    assert.deepEqual(entriesOf(r.internalNumberTable('__pane:1')), atBarrier);
  });

  test('a restore over keys held already gives them the snapshot values', async () => {
    const b = new KeyedStateBackend(all, 'op');
    const t = b.internalNumberTable('__counts');
    for (let k = 0; k < 1_000; k++) t.group(3).insert(k, k * 0.5);
    const snapshot = await b.snapshot();
    const g = t.group(3);
    g.pairs[g.indexOf(10)] = 99;
    t.loadGroup(3, snapshot[0]!.groups[0]!);
    assert.equal(g.pairs[g.indexOf(10)], 5);
    assert.equal(g.size, 1_000);
  });

  test("a table of numbers is the engine's: a user state name cannot take it, nor another kind its name", () => {
    const b = new KeyedStateBackend(all, 'op');
    assert.throws(() => b.internalNumberTable('counts'), /names starting with '__' are the engine's/);
    b.internalNumberTable('__n');
    assert.throws(() => b.internalTable('__n'), /is a internal-numbers state/);
    assert.deepEqual(b.describe(), []);
  });
});

describe('flat group encoding', () => {
  const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
  const value = fc.oneof(fc.integer({ min: 0, max: 255 }), int32, fc.double());

  test('any integer keys and numbers decode as they were, in order (-0 and NaN values included)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(int32, value), { maxLength: 200 }), (entries) => {
        const values = Float64Array.from(entries.map(([, v]) => v));
        const out = decoded(
          encodeNumberGroup(
            entries.map(([k]) => k),
            values,
          ),
        );
        assert.equal(out.length, entries.length);
        out.forEach(([k, v], i) => {
          assert.equal(k, entries[i]![0], `key ${i}`);
          assert.ok(Object.is(v, values[i]), `value ${i}`);
        });
      }),
    );
  });

  test('columns are as narrow as their numbers allow', () => {
    const keys = Array.from({ length: 100 }, (_, i) => i * 1_000);
    const bytes = (values: number[], ks: number[] = keys): number => encodeNumberGroup(ks, values).length;
    const counts = Array.from({ length: 100 }, (_, i) => i % 200);
    assert.equal(bytes(counts), 16 + 400 + 100, 'int32 keys, uint8 values');
    assert.equal(bytes(counts.map((c) => c + 1_000)), 16 + 400 + 400, 'int32 values');
    assert.equal(bytes(counts.map((c) => c + 0.5)), 16 + 400 + 800, 'float64 values');
    assert.equal(bytes([-0, ...counts.slice(1)]), 16 + 400 + 800, '-0 needs float64');
    assert.equal(bytes(counts, counts), 16 + 104 + 100, 'uint8 keys, the value column 8-aligned');
  });

  test('a damaged group fails with CLINK_ERR_STATE or reads as as many entries, never throws anything else', () => {
    const good = encodeNumberGroup([1, 2, 300], [1, 2, 3.5]);
    fc.assert(
      fc.property(fc.nat(good.length - 1), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const bad = good.slice();
        bad[at] = bad[at]! ^ flip;
        try {
          assert.equal(decoded(bad).length, 3);
        } catch (err) {
          assert.equal((err as { code?: string }).code, 'CLINK_ERR_STATE', String(err));
        }
      }),
    );
    assert.throws(() => decoded(good.subarray(0, 10)), { code: 'CLINK_ERR_STATE' });
  });
});
