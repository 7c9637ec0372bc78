import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { threadId } from 'node:worker_threads';
import type { Arbitrary } from 'fast-check';
import { keyGroupOf, KeyGroupRange, normalizeKey } from '../../src/plan/index.js';
import { KeyedStateBackend, removeThreadStateDir } from '../../src/state/index.js';
import { stateBackends } from '../helpers.js';

const backends = stateBackends();
after(() => backends.closeAll());

type Op =
  | { kind: 'update' | 'clear' | 'get'; key: number; n: number }
  | { kind: 'put' | 'remove'; key: number; field: string; n: number }
  | { kind: 'add'; key: number; n: number }
  | { kind: 'snapshot' };

/** Apply `op` to `b` and return what it read. */
function apply(b: KeyedStateBackend, op: Op): unknown {
  if (op.kind === 'snapshot') return undefined;
  b.setCurrentKey(op.key);
  const v = b.value<{ n: number }>('v');
  const m = b.map<string, number>('m');
  const l = b.list<number>('l');
  switch (op.kind) {
    case 'update':
      v.update({ n: op.n });
      return undefined;
    case 'clear':
      v.clear();
      return undefined;
    case 'get': {
      // Changed in place, without update(): the cache writes back what its reader may have changed.
      const got = v.value();
      if (got) got.n += op.n;
      return [structuredClone(got), [...m.entries()], l.get()];
    }
    case 'put':
      m.put(op.field, op.n);
      return undefined;
    case 'remove':
      m.remove(op.field);
      return undefined;
    case 'add':
      l.add(op.n);
      return undefined;
  }
}

/** Every key's value in a backend, read through the handles. */
function contents(b: KeyedStateBackend, keys: number): unknown[] {
  const out: unknown[] = [];
  for (let k = 0; k < keys; k++) {
    b.setCurrentKey(k);
    out.push([b.value('v').value(), [...b.map('m').entries()], b.list('l').get()]);
  }
  return structuredClone(out);
}

describe('the disk state backend', () => {
  test('reads what the heap backend reads, through evictions and snapshots, and each restores the other', async () => {
    const fc = (await import('fast-check')).default;
    const KEYS = 40;
    const key = fc.integer({ min: 0, max: KEYS - 1 });
    const n = fc.integer({ min: -5, max: 5 });
    const op: Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constantFrom('update' as const, 'clear' as const, 'get' as const), key, n }),
      fc.record({ kind: fc.constantFrom('put' as const, 'remove' as const), key, field: fc.constantFrom('a', 'b'), n }),
      fc.record({ kind: fc.constant('add' as const), key, n }),
      fc.constant({ kind: 'snapshot' as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 120 }), fc.integer({ min: 1, max: 12 }), async (ops, cache) => {
        const heap = backends.make('heap');
        const disk = backends.make('disk', { cacheEntries: cache });
        const pending: [Promise<unknown>, Promise<unknown>, unknown][] = [];
        for (const o of ops) {
          if (o.kind === 'snapshot') {
            pending.push([heap.snapshot(), disk.snapshot(), contents(heap, KEYS)]);
            continue;
          }
          assert.deepEqual(apply(disk, o), apply(heap, o), JSON.stringify(o));
        }
        assert.deepEqual(contents(disk, KEYS), contents(heap, KEYS));
        assert.deepEqual(disk.describe(), heap.describe(), 'key counts');
        for (const [heapSnap, diskSnap, atBarrier] of pending) {
          // The disk snapshot restores into a heap backend, and the heap one into a disk backend.
          const intoHeap = backends.make('heap');
          await intoHeap.restore((await diskSnap) as never);
          assert.deepEqual(contents(intoHeap, KEYS), atBarrier, 'the disk snapshot is the state at its barrier');
          const intoDisk = backends.make('disk', { cacheEntries: cache });
          await intoDisk.restore((await heapSnap) as never);
          assert.deepEqual(contents(intoDisk, KEYS), atBarrier);
        }
      }),
      { numRuns: 60 },
    );
  });

  test('keeps more keys than its cache holds, exact through a snapshot and a restore into two subtasks', async () => {
    const b = backends.make('disk', { cacheEntries: 1_000 });
    const v = b.value<number>('count');
    for (let round = 0; round < 3; round++)
      for (let k = 0; k < 50_000; k++) {
        b.setCurrentKey(k);
        v.update((v.value() ?? 0) + k);
      }
    assert.deepEqual(b.describe(), [{ name: 'count', kind: 'value', keys: 50_000 }]);
    const snapshot = await b.snapshot();
    const halves = await Promise.all(
      [0, 1].map(async (i) => {
        const r = backends.make('disk', { range: KeyGroupRange.forSubtask(i, 2) });
        await r.restore(snapshot);
        return r;
      }),
    );
    assert.equal(halves[0]!.describe()[0]!.keys + halves[1]!.describe()[0]!.keys, 50_000);
    for (const k of [0, 1, 24_999, 49_999]) {
      const kg = keyGroupOf(normalizeKey(k));
      const r = halves.find((h) => kg >= h.keyGroupRange.start && kg <= h.keyGroupRange.end)!;
      r.setCurrentKey(k);
      assert.equal(r.value<number>('count').value(), 3 * k);
    }
  });

  test('close removes its store; a store left by a process that died is removed by the next one to open one', async () => {
    const root = mkdtempSync(join(tmpdir(), 'clink-disk-close-'));
    try {
      // A process that exits without closing its store (as kill -9 would leave it).
      const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
      const deadDir = join(root, `p${dead.stdout.trim()}`, 'op-abc');
      mkdirSync(deadDir, { recursive: true });
      const b = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'op', undefined, undefined, undefined, {
        localDir: root,
      });
      b.setCurrentKey('k');
      b.value<number>('v').update(1);
      assert.equal(existsSync(deadDir), false, "the dead process's store is gone");
      const mine = join(root, `p${process.pid}`, `t${threadId}`);
      assert.equal(readdirSync(mine).length, 1, 'one store, for this backend');
      await b.close();
      assert.deepEqual(readdirSync(mine), [], 'closed: its directory is removed');
      // A job thread's directory, as its worker removes it once the thread ended without closing.
      removeThreadStateDir(root, threadId);
      assert.equal(existsSync(mine), false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('a local state directory it cannot write is refused in one line naming it and the flag', () => {
    // A regular file where the directory should be: refused even to root.
    const file = join(mkdtempSync(join(tmpdir(), 'clink-disk-file-')), 'file');
    writeFileSync(file, '');
    const b = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'op', undefined, undefined, undefined, {
      localDir: join(file, 'state'),
    });
    b.setCurrentKey('k');
    try {
      assert.throws(() => b.value('v'), {
        code: 'CLINK_ERR_STATE',
        message: new RegExp(`the disk state backend cannot open its store under ${file}/state: .*--local-state-dir`),
      });
    } finally {
      rmSync(dirname(file), { recursive: true, force: true });
    }
  });
});
