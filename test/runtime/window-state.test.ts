/**
 * Window panes in keyed state: a count of a key that stands for itself is a number in a table of numbers
 * (columns in the checkpoint), another accumulator of such a key is stored alone, an object key keeps
 * its original; a checkpoint restores to exactly the uninterrupted output, and so do checkpoints taken
 * by a clink of each layout before this one (golden files).
 */
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runJob, startJob, type JobDefinition, type JobResult, type JobSnapshot } from '../../src/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { decodeNumberGroup, decodeStateFile, statePackr, type EncodedGroup } from '../../src/state/index.js';
import { sortBy, waitFor } from '../helpers.js';

const cacheDir = join(tmpdir(), `clink-window-state-tests-${process.pid}`);
const VECTOR = fileURLToPath(new URL('../vectors/state/window-panes-legacy.bin', import.meta.url));
/** Taken by the clink of 2026-12-02: a count was a number in the pane's StateTable. */
const VECTOR_2026_12_02 = fileURLToPath(new URL('../vectors/state/window-panes-2026-12-02.bin', import.meta.url));
const OUTPUTS = ['by auction', 'by pair', 'spend'];
let job: JobDefinition;
let expected: JobResult;

before(async () => {
  job = (await loadJobModule(fileURLToPath(new URL('../fixtures/jobs/window-panes.ts', import.meta.url)), { cacheDir }))
    .job;
  expected = await runJob(job, { parallelism: 2 });
});
after(() => rm(cacheDir, { recursive: true, force: true }));

function assertUninterrupted(result: JobResult, what: string): void {
  for (const name of OUTPUTS) {
    assert.ok(expected.collected[name]!.length > 0, name);
    assert.deepEqual(sortBy(result.collected[name]!), sortBy(expected.collected[name]!), `${what}: ${name}`);
  }
}

/** Every `{ name, groups }` table of a snapshot whose name starts with `prefix`. */
function tables(snapshot: unknown, prefix: string): { name: string; groups: EncodedGroup[] }[] {
  const found: { name: string; groups: EncodedGroup[] }[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v)) {
      const t = v as { name?: unknown; groups?: unknown };
      if (typeof t.name === 'string' && t.name.startsWith(prefix) && Array.isArray(t.groups))
        found.push(t as { name: string; groups: EncodedGroup[] });
      else Object.values(v).forEach(walk);
    }
  };
  walk(snapshot);
  return found;
}

test('a checkpoint mid-stream holds counts as numbers and object keys with their original; it restores (and rescales) to the uninterrupted output', async () => {
  const exec = startJob(job, { parallelism: 2, params: { rate: '40000' } });
  let snapshot: JobSnapshot | undefined;
  // Taken once some panes hold keys, long before the 20 000 events are read.
  await waitFor('pane state to checkpoint', async () => {
    snapshot = await exec.triggerCheckpoint();
    return (
      tables(snapshot, '__window-pane:').some((t) => t.groups.length > 0) &&
      tables(snapshot, '__window-numbers:').some((t) => t.groups.length > 0)
    );
  });
  exec.cancel('stopped by the test after its checkpoint');
  await exec.done.catch(() => undefined);
  const values = tables(snapshot, '__window-pane:').flatMap((t) =>
    t.groups.flatMap(([, entries]) => [...(statePackr.unpack(entries) as Map<unknown, unknown>)]),
  );
  const counts: [unknown, number][] = [];
  for (const t of tables(snapshot, '__window-numbers:'))
    for (const [, entries] of t.groups) decodeNumberGroup(entries, (k, v) => counts.push([k, v]));
  assert.ok(
    counts.length > 0 && counts.every(([k, v]) => typeof k === 'number' && Number.isInteger(v) && v > 0),
    'counts of number keys are numbers in a table of numbers',
  );
  assert.ok(
    values.some(([k, v]) => typeof k === 'number' && typeof (v as { n?: unknown }).n === 'number'),
    'an object accumulator of a number key is stored alone',
  );
  assert.ok(
    values.every(([k]) => typeof k === 'string' || typeof k === 'number'),
    'keys are normalized',
  );
  assert.ok(
    values.some(([k, v]) => typeof k === 'string' && Array.isArray((v as { key?: unknown }).key)),
    'an array key is kept with its accumulator',
  );
  assert.equal(tables(snapshot, '__pane:').length, 0, 'nothing in the layout before');
  assertUninterrupted(await runJob(job, { parallelism: 2, restore: snapshot }), 'restored');
  assertUninterrupted(await runJob(job, { parallelism: 3, restore: snapshot }), 'rescaled to 3');
});

test('a checkpoint taken before this layout (panes of { key, keyGroup, acc }) restores to the uninterrupted output, at its parallelism and rescaled', async () => {
  const legacy = decodeStateFile(await readFile(VECTOR), VECTOR) as JobSnapshot;
  assert.ok(
    tables(legacy, '__pane:').some((t) => t.groups.length > 0),
    'the golden file holds panes in the old layout',
  );
  assertUninterrupted(await runJob(job, { parallelism: 2, restore: legacy }), 'legacy');
  assertUninterrupted(await runJob(job, { parallelism: 1, restore: legacy }), 'legacy rescaled to 1');
});

test("a checkpoint taken when counts were numbers in the pane's StateTable (2026-12-02) restores to the uninterrupted output, at its parallelism and rescaled", async () => {
  const old = decodeStateFile(await readFile(VECTOR_2026_12_02), VECTOR_2026_12_02) as JobSnapshot;
  const counted = tables(old, '__window-pane:').flatMap((t) =>
    t.groups.flatMap(([, entries]) => [...(statePackr.unpack(entries) as Map<unknown, unknown>)]),
  );
  assert.ok(
    counted.some(([k, v]) => typeof k === 'number' && typeof v === 'number'),
    'the golden file holds counts in a StateTable',
  );
  assert.equal(tables(old, '__window-numbers:').length, 0);
  assertUninterrupted(await runJob(job, { parallelism: 2, restore: old }), '2026-12-02');
  assertUninterrupted(await runJob(job, { parallelism: 3, restore: old }), '2026-12-02 rescaled to 3');
});
