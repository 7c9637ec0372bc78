import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { KeyedStateBackend } from '../../src/state/index.js';
import { stateBackends } from '../helpers.js';

const backends = stateBackends();
after(() => backends.closeAll());

for (const type of ['heap', 'disk'] as const) {
  /** A backend whose TTL clock is `clock.now`, moved by the test. */
  const backend = (clock: { now: number }): KeyedStateBackend => backends.make(type, { ttlNow: () => clock.now });

  describe(`state TTL on the ${type} backend, on an injected clock`, () => {
    test('a value expires ttlMs after it was written; a write renews it; a read does not, unless OnReadAndWrite', () => {
      const clock = { now: 1_000 };
      const b = backend(clock);
      const write = b.value<string>('w', { ttl: { ttlMs: 100 } });
      const read = b.value<string>('r', { ttl: { ttlMs: 100, updateType: 'OnReadAndWrite' } });
      b.setCurrentKey('k');
      write.update('a');
      read.update('a');
      clock.now = 1_099;
      assert.equal(write.value(), 'a', 'alive 1 ms before it expires');
      assert.equal(read.value(), 'a', 'this read renews it until 1,199');
      clock.now = 1_100;
      assert.equal(write.value(), undefined, 'expired at exactly ttlMs: never returned');
      assert.equal(read.value(), 'a');
      write.update('b');
      clock.now = 1_199;
      assert.equal(write.value(), 'b', 'the write at 1,100 lives until 1,200');
      clock.now = 1_299;
      assert.equal(read.value(), undefined, 'read last at 1,199: expired at 1,299');
      assert.equal(b.ttl.expired, 2);
    });

    test("a map's entries and a list's elements expire one by one", () => {
      const clock = { now: 0 };
      const b = backend(clock);
      const m = b.map<string, number>('m', { ttl: { ttlMs: 10 } });
      const l = b.list<number>('l', { ttl: { ttlMs: 10 } });
      b.setCurrentKey(7);
      m.put('old', 1);
      l.add(1);
      clock.now = 5;
      m.put('new', 2);
      l.addAll([2, 3]);
      assert.deepEqual(
        [...m.entries()],
        [
          ['old', 1],
          ['new', 2],
        ],
      );
      assert.deepEqual(l.get(), [1, 2, 3]);
      clock.now = 10;
      assert.equal(m.get('old'), undefined);
      assert.equal(m.has('new'), true);
      assert.deepEqual([...m.keys()], ['new']);
      assert.equal(m.size(), 1);
      assert.deepEqual(l.get(), [2, 3]);
      clock.now = 15;
      assert.equal(m.isEmpty(), true);
      assert.deepEqual(l.get(), []);
      assert.deepEqual(b.describe(), [
        { name: 'm', kind: 'map', keys: 0 },
        { name: 'l', kind: 'list', keys: 0 },
      ]);
      assert.equal(b.ttl.expired, 5, 'two entries and three elements');
    });

    test('the cleanup empties keys that are never read again: every access checks cleanupSize more keys', () => {
      const clock = { now: 0 };
      const b = backend(clock);
      const v = b.value<number>('v', { ttl: { ttlMs: 50, cleanupSize: 10 } });
      for (let k = 0; k < 1_000; k++) {
        b.setCurrentKey(k);
        v.update(k);
      }
      assert.equal(b.describe()[0]!.keys, 1_000);
      clock.now = 50;
      // One key, read over and over: each access sweeps ten others.
      b.setCurrentKey('live');
      for (let i = 0; i < 60; i++) v.update(i);
      const left = b.describe()[0]!.keys;
      if (type === 'heap') {
        // Ten keys checked per access: six hundred, one of which may be the live key when the sweep meets it.
        assert.ok(left >= 1_000 - 600 + 1 && left <= 1_000 - 599 + 1, `${left} keys left after sixty accesses`);
        // The four hundred left, and the live key met again on the way.
        for (let i = 0; i < 41; i++) v.update(i);
      } else {
        // The sweep reads the store; keys only the cache holds (16 here) wait until it writes them back.
        assert.ok(left <= 1_000 - 600 + 16 + 1, `${left} keys left after sixty accesses`);
        for (let i = 0; i < 60 && b.describe()[0]!.keys > 1; i++) v.update(i);
      }
      assert.equal(b.describe()[0]!.keys, 1, 'only the live key is left');
      assert.equal(b.ttl.expired, 1_000);
      // With everything swept, an access still costs at most one round of the empty key groups.
      v.update(1);
      assert.equal(v.value(), 1);
    });

    test('an expiry survives a snapshot and a restore; a TTL cannot be added to or taken from a checkpointed state', async () => {
      const clock = { now: 0 };
      const b = backend(clock);
      b.setCurrentKey('k');
      b.value<string>('t', { ttl: { ttlMs: 100 } }).update('x');
      b.value<string>('plain').update('y');
      const snapshot = await b.snapshot();
      assert.deepEqual(
        snapshot.map((s) => [s.name, s.ttl]),
        [
          ['t', true],
          ['plain', undefined],
        ],
      );
      clock.now = 99;
      const r = backend(clock);
      await r.restore(snapshot);
      r.setCurrentKey('k');
      assert.equal(r.value<string>('t', { ttl: { ttlMs: 100 } }).value(), 'x');
      assert.equal(r.value<string>('plain').value(), 'y');
      clock.now = 100;
      assert.equal(r.value<string>('t', { ttl: { ttlMs: 100 } }).value(), undefined, 'expired on the restored clock');

      const added = backend(clock);
      await added.restore(snapshot);
      assert.throws(() => added.value('plain', { ttl: { ttlMs: 5 } }), {
        code: 'CLINK_ERR_STATE',
        message:
          "state 'plain' of operator 'op' was checkpointed without a TTL and is declared with one; a TTL cannot be added to a state that holds values: give the state a new name",
      });
      assert.throws(() => added.value('t'), /was checkpointed with a TTL and is declared without one/);
      assert.throws(
        () => r.value('t', { ttl: { ttlMs: 7 } }),
        /is asked for with a TTL of 7 ms .* but was declared with a TTL of 100 ms/,
      );
    });

    test('a TTL that is not one is refused, naming the state', () => {
      const b = backend({ now: 0 });
      assert.throws(
        () => b.value('a', { ttl: { ttlMs: 0 } }),
        /state 'a' of operator 'op': ttl.ttlMs must be a positive number/,
      );
      assert.throws(
        () => b.map('b', { ttl: { ttlMs: 1, updateType: 'Never' as 'OnReadAndWrite' } }),
        /ttl.updateType must be one of OnCreateAndWrite, OnReadAndWrite, got Never/,
      );
      assert.throws(
        () => b.list('c', { ttl: { ttlMs: 1, cleanupSize: -1 } }),
        /ttl.cleanupSize must be a whole number/,
      );
    });

    test('a snapshot in flight keeps the values of its barrier while TTL states expire and renew', async () => {
      const clock = { now: 0 };
      const b = backend(clock);
      const v = b.value<{ n: number }>('v', { ttl: { ttlMs: 10, updateType: 'OnReadAndWrite' } });
      const m = b.map<string, number>('m', { ttl: { ttlMs: 10 } });
      for (let k = 0; k < 500; k++) {
        b.setCurrentKey(k);
        v.update({ n: k });
        m.put('a', k);
      }
      const pending = b.snapshot();
      clock.now = 10;
      for (let k = 0; k < 500; k += 2) {
        b.setCurrentKey(k);
        assert.equal(v.value(), undefined);
        assert.equal(m.get('a'), undefined);
      }
      const r = backend({ now: 5 });
      await r.restore(await pending);
      const rv = r.value<{ n: number }>('v', { ttl: { ttlMs: 10, updateType: 'OnReadAndWrite' } });
      const rm = r.map<string, number>('m', { ttl: { ttlMs: 10 } });
      for (const k of [0, 1, 498, 499]) {
        r.setCurrentKey(k);
        assert.deepEqual(rv.value(), { n: k });
        assert.equal(rm.get('a'), k);
      }
    });
  });
}
