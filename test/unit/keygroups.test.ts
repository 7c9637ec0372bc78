import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  KeyGroupRange,
  MAX_PARALLELISM,
  keyGroupOf,
  murmurInt,
  murmurString,
  normalizeKey,
  operatorIndexForKeyGroup,
} from '../../src/plan/index.js';

describe('key groups', () => {
  test('murmur3 gives the pinned values, so every process agrees on key groups', () => {
    // MurmurHash3 x86_32 reference values for the 4-byte keys 0 and 1 (as Guava's hashInt gives them).
    // A change here would move keys between key groups and break restored state.
    assert.equal(murmurInt(0), 0x2362f9de);
    assert.equal(murmurInt(1), 0xfbf1402a);
    assert.equal(murmurString(''), 0);
    assert.deepEqual(
      ['user-1', 'boiler', 'a'].map((k) => keyGroupOf(normalizeKey(k))),
      ['user-1', 'boiler', 'a'].map((k) => murmurString(k) % MAX_PARALLELISM),
    );
  });

  test('every key group belongs to exactly the subtask whose range contains it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_PARALLELISM }), (p) => {
        const ranges = Array.from({ length: p }, (_, i) => KeyGroupRange.forSubtask(i, p));
        assert.equal(ranges[0]!.start, 0);
        assert.equal(ranges[p - 1]!.end, MAX_PARALLELISM - 1);
        for (let kg = 0; kg < MAX_PARALLELISM; kg++) {
          const owner = operatorIndexForKeyGroup(kg, p);
          assert.ok(ranges[owner]!.contains(kg), `kg ${kg} p ${p} owner ${owner}`);
          assert.equal(ranges.filter((r) => r.contains(kg)).length, 1);
        }
      }),
    );
  });

  test('composite keys hash by value, not identity', () => {
    assert.equal(normalizeKey([1, 'a']), normalizeKey([1, 'a']));
    assert.equal(normalizeKey({ b: 2, a: 1 }), normalizeKey({ a: 1, b: 2 }));
    assert.notEqual(normalizeKey([1, 'a']), normalizeKey('[1,"a"]'));
    fc.assert(
      fc.property(fc.anything(), (k) => {
        const g = keyGroupOf(normalizeKey(k));
        assert.ok(Number.isInteger(g) && g >= 0 && g < MAX_PARALLELISM);
      }),
    );
  });

  test('keys spread over all key groups', () => {
    const counts = new Array<number>(MAX_PARALLELISM).fill(0);
    for (let i = 0; i < 12_800; i++) counts[keyGroupOf(normalizeKey(`key-${i}`))]!++;
    assert.ok(
      Math.min(...counts) > 50 && Math.max(...counts) < 160,
      `uneven: ${Math.min(...counts)}..${Math.max(...counts)}`,
    );
  });
});
