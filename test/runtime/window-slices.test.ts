/**
 * Sliding windows of counts kept in slices (a pane per slide, combined when a window fires): the same
 * results as counting each window apart, late records within the allowed lateness, and checkpoints:
 * one taken mid-stream holds slices and restores (and rescales) to the uninterrupted output, and so
 * does one taken when every window had a pane of its own (a golden file of 2026-12-04).
 */
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import {
  runJob,
  startJob,
  Windows,
  type JobDefinition,
  type JobResult,
  type JobSnapshot,
  type WindowCount,
} from '../../src/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { decodeStateFile } from '../../src/state/index.js';
import { collect, sortBy, waitFor } from '../helpers.js';

interface Ev {
  k: number | string;
  ts: number;
}

/** Each window's count per key, counted window by window: what the slices must add up to. */
function expectedCounts(input: Ev[], size: number, slide: number): WindowCount<number | string>[] {
  const counts = new Map<string, WindowCount<number | string>>();
  for (const e of input) {
    const last = e.ts - (((e.ts % slide) + slide) % slide);
    for (let start = last; start > e.ts - size; start -= slide) {
      const id = JSON.stringify([e.k, start]);
      const c = counts.get(id);
      if (c) c.count++;
      else counts.set(id, { key: e.k, start, end: start + size, count: 1 });
    }
  }
  return sortBy([...counts.values()]);
}

describe('sliding windows of counts in slices', () => {
  test('the counts are those of each window counted apart, for integer and string keys, at parallelism 1 and 2, with and without pre-aggregation', async () => {
    const record = fc.record({
      k: fc.oneof(fc.integer({ min: -3, max: 40 }), fc.constantFrom('x', 'y', 'z')),
      ts: fc.integer({ min: -50, max: 400 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(record, { minLength: 1, maxLength: 120 }),
        fc.constantFrom<[number, number]>([20, 5], [30, 10], [12, 4]),
        fc.constantFrom(1, 2),
        fc.boolean(),
        async (input, [size, slide], parallelism, batched) => {
          // Out-of-orderness covering the input's whole span: no record is late.
          const out = await collect<WindowCount<number | string>>(
            (env) => {
              env
                .fromElements(input)
                .assignTimestamps((e) => e.ts, { maxOutOfOrdernessMs: 1_000 })
                .keyBy((e) => e.k)
                .window(Windows.sliding(size, slide))
                .count()
                .collect();
            },
            { parallelism, batchSize: batched ? 7 : 1 },
          );
          assert.deepEqual(sortBy(out), expectedCounts(input, size, slide));
        },
      ),
      { numRuns: 60 },
    );
  });

  test('processing time: every record is counted in each of its size/slide windows, whichever slices the clock put it in', async () => {
    const input = Array.from({ length: 5_000 }, (_, i) => ({ k: i % 13, ts: 0 }));
    const out = await collect<WindowCount<number>>(
      (env) => {
        env
          .fromElements(input)
          .keyBy((e) => e.k as number)
          .window(Windows.sliding(6, 2), { time: 'processing' })
          .count()
          .collect();
      },
      { batchSize: 10 },
    );
    assert.equal(
      out.reduce((n, c) => n + c.count, 0),
      3 * input.length,
    );
    assert.ok(out.every((c) => c.end - c.start === 6 && c.start % 2 === 0));
    // No window fires twice for a key.
    assert.equal(new Set(out.map((c) => `${c.key}@${c.start}`)).size, out.length);
  });

  test('allowed lateness: a late record re-fires each fired window holding it, for its key, with the count over all its slices', async () => {
    const out = await collect<WindowCount<string>>(
      (env) => {
        env
          .fromElements<Ev>([
            { k: 'a', ts: 1 },
            { k: 'b', ts: 3 },
            { k: 'a', ts: 7 },
            { k: 'a', ts: 14 },
            { k: 'a', ts: 4 },
            { k: 'a', ts: 40 },
            { k: 'a', ts: 2 },
          ])
          .assignTimestamps((e) => e.ts)
          .keyBy((e) => e.k as string)
          .window(Windows.sliding(10, 5), { allowedLatenessMs: 6 })
          .count()
          .collect();
      },
      { batchSize: 1 },
    );
    const row = (c: WindowCount<string>): string => `${c.key}[${c.start},${c.end})=${c.count}`;
    const rows = out.map(row);
    // 14 moves the watermark to 13, past [-5, 5) and [0, 10): each fires for a and b (in key-group order).
    assert.deepEqual(sortBy(rows.slice(0, 2)), ['a[-5,5)=1', 'b[-5,5)=1']);
    assert.deepEqual(sortBy(rows.slice(2, 4)), ['a[0,10)=2', 'b[0,10)=1']);
    assert.deepEqual(rows.slice(4), [
      // 4 arrives at watermark 13: [-5, 5) is gone (kept until 4 + 6), [0, 10) (kept until 15) fires again for a.
      'a[0,10)=3',
      // 40: watermark 39 fires [5, 15) and [10, 20) and drops everything before 40 - 6; [35, 45) and [40, 50) at the end.
      'a[5,15)=2',
      'a[10,20)=1',
      'a[35,45)=1',
      'a[40,50)=1',
    ]);
    // 2 came at watermark 39: every window holding it was gone.
  });
});

const cacheDir = join(tmpdir(), `clink-window-slices-tests-${process.pid}`);
/** Taken on 2026-12-04, when each sliding window kept a pane of its own (`__window-numbers:<window start>`). */
const VECTOR_2026_12_04 = fileURLToPath(new URL('../vectors/state/sliding-windows-2026-12-04.bin', import.meta.url));
const OUTPUTS = ['by auction', 'by string', 'by pair'];
let job: JobDefinition;
let expected: JobResult;

/** Names of a snapshot's tables (with any groups) that start with `prefix`. */
function tableNames(snapshot: unknown, prefix: string): string[] {
  const found: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v)) {
      const t = v as { name?: unknown; groups?: unknown[] };
      if (typeof t.name === 'string' && Array.isArray(t.groups)) {
        if (t.name.startsWith(prefix) && t.groups.length > 0) found.push(t.name);
      } else Object.values(v).forEach(walk);
    }
  };
  walk(snapshot);
  return found;
}

function assertUninterrupted(result: JobResult, what: string): void {
  for (const name of OUTPUTS) {
    assert.ok(expected.collected[name]!.length > 100, name);
    assert.deepEqual(sortBy(result.collected[name]!), sortBy(expected.collected[name]!), `${what}: ${name}`);
  }
}

describe('checkpoints of sliding windows in slices', () => {
  before(async () => {
    job = (
      await loadJobModule(fileURLToPath(new URL('../fixtures/jobs/sliding-windows.ts', import.meta.url)), { cacheDir })
    ).job;
    expected = await runJob(job, { parallelism: 2 });
  });
  after(() => rm(cacheDir, { recursive: true, force: true }));

  test('a checkpoint mid-stream holds slices, and restores (and rescales) to the uninterrupted output', async () => {
    const exec = startJob(job, { parallelism: 2, params: { rate: '1' } });
    let snapshot: JobSnapshot | undefined;
    await waitFor('slices to checkpoint', async () => {
      snapshot = await exec.triggerCheckpoint();
      return (
        tableNames(snapshot, '__window-slice-numbers:').length > 0 && tableNames(snapshot, '__window-slice:').length > 0
      );
    });
    exec.cancel('stopped by the test after its checkpoint');
    await exec.done.catch(() => undefined);
    assert.deepEqual(tableNames(snapshot, '__window-numbers:'), [], 'no pane per window');
    assertUninterrupted(await runJob(job, { parallelism: 2, restore: snapshot }), 'restored');
    assertUninterrupted(await runJob(job, { parallelism: 3, restore: snapshot }), 'rescaled to 3');
  });

  test('a checkpoint taken when each window had a pane of its own (2026-12-04) restores to the uninterrupted output, at its parallelism and rescaled', async () => {
    const old = decodeStateFile(await readFile(VECTOR_2026_12_04), VECTOR_2026_12_04) as JobSnapshot;
    assert.ok(
      tableNames(old, '__window-numbers:').length > 0 && tableNames(old, '__window-pane:').length > 0,
      'the golden file holds a pane per window',
    );
    assert.deepEqual(tableNames(old, '__window-slice'), []);
    assertUninterrupted(await runJob(job, { parallelism: 2, restore: old }), '2026-12-04');
    assertUninterrupted(await runJob(job, { parallelism: 1, restore: old }), '2026-12-04 rescaled to 1');
  });
});
