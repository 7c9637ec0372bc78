import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keyGroupOf, KeyGroupRange, normalizeKey, operatorIndexForKeyGroup } from '../../src/plan/index.js';
import { KeyedStateBackend } from '../../src/state/index.js';

describe('keyed state backend', () => {
  test('values are stored in the table of their key group', () => {
    const b = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'op');
    const v = b.value<number>('count');
    for (const k of ['a', 'b', 'c', 42]) {
      b.setCurrentKey(k);
      v.update(String(k).length);
    }
    const table = (
      b as unknown as { tables: Map<string, { table: { groups: (Map<unknown, unknown> | undefined)[] } }> }
    ).tables.get('count')!.table;
    for (const k of ['a', 'b', 'c', 42]) assert.ok(table.groups[keyGroupOf(normalizeKey(k))]!.has(k));
    assert.deepEqual(b.describe(), [{ name: 'count', kind: 'value', keys: 4 }]);
  });

  test('a key outside the subtask’s key-group range is refused, naming the operator and range', () => {
    const kg = keyGroupOf(normalizeKey('x'));
    const owner = operatorIndexForKeyGroup(kg, 4);
    const other = (owner + 1) % 4;
    const b = new KeyedStateBackend(KeyGroupRange.forSubtask(other, 4), 'counter');
    assert.throws(
      () => b.setCurrentKey('x'),
      new RegExp(`operator 'counter' got key "x" of key group ${kg}, outside its KeyGroupRange`),
    );
  });

  test('map and list state are per key and empty for a new key', () => {
    const b = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'op');
    const m = b.map<string, number>('m');
    const l = b.list<number>('l');
    b.setCurrentKey('k1');
    m.put('x', 1);
    l.addAll([1, 2]);
    b.setCurrentKey('k2');
    assert.equal(m.isEmpty(), true);
    assert.deepEqual(l.get(), []);
    b.setCurrentKey('k1');
    assert.deepEqual([...m.entries()], [['x', 1]]);
    m.remove('x');
    assert.equal(m.size(), 0);
    assert.deepEqual(l.get(), [1, 2]);
  });
});

test('setCurrentKey gives the key group of every key, in runs of one key and across them (the current key is remembered)', async () => {
  const fc = (await import('fast-check')).default;
  const b = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'op');
  const key = fc.oneof(
    fc.constantFrom<unknown>(0, -0, NaN, 2 ** 40, '0', 'a', null, undefined, true),
    fc.integer(),
    fc.string({ maxLength: 3 }),
  );
  fc.assert(
    fc.property(fc.array(fc.tuple(key, fc.integer({ min: 1, max: 3 }), fc.boolean())), (runs) => {
      for (const [k, n, viaTimer] of runs) {
        // A timer or a window's emit sets the key unchecked, from what it kept: the next record meets that.
        if (viaTimer) b.setCurrentKeyUnchecked(k, normalizeKey(k), keyGroupOf(normalizeKey(k)));
        for (let i = 0; i < n; i++) {
          assert.equal(b.setCurrentKey(k), keyGroupOf(normalizeKey(k)));
          assert.ok(
            Object.is(b.currentKey, k) &&
              Object.is(b.currentNormalizedKey, normalizeKey(k)) &&
              b.currentKeyGroup === keyGroupOf(normalizeKey(k)),
          );
        }
      }
    }),
    { numRuns: 2_000 },
  );
});
