// The restore gate: which checkpoint may restore into which plan, decided in-process.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkRestore, identityOf } from '../../src/coordinator/index.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

/** The physical plan of a job built by `build`. */
function plan(name: string, build: (env: JobEnvironment) => void, parallelism = 2) {
  return createPhysicalPlan(buildJob(defineJob({ name, version: '1' }, build), { parallelism }).spec);
}

const counts = (env: JobEnvironment) =>
  env
    .fromSequence(1, 100)
    .keyBy((x) => x % 7)
    .count()
    .uid('counts')
    .collect();
const countsAndSums = (env: JobEnvironment) => {
  const s = env.fromSequence(1, 100);
  s.keyBy((x) => x % 7)
    .count()
    .uid('counts')
    .collect();
  s.keyBy((x) => x % 3)
    .sum()
    .uid('sums')
    .collect('sums');
};

/** A checkpoint as a marker records it, of `p` run as job `name`. */
const checkpointOf = (p: ReturnType<typeof plan>, name: string) => ({
  checkpointId: 7,
  subtasks: p.subtasks.map((s) => `${s.taskId}#${s.index}`),
  identity: identityOf(p, name),
});

describe('the restore gate', () => {
  test('the same job restores every operator', () => {
    const p = plan('clicks', counts);
    const d = checkRestore(checkpointOf(p, 'clicks'), p, 'clicks', false);
    assert.deepEqual([...d.restoredTasks].sort(), p.tasks.map((t) => t.id).sort());
    assert.equal(d.restoredOperators, p.spec.operators.length);
    assert.deepEqual(d.dropped, []);
    assert.equal(d.graphChanged, false);
  });

  test("another job's checkpoint is refused naming both jobs, even when the operators (generated ids) match", () => {
    const p = plan('clicks-per-minute', counts);
    assert.throws(
      () =>
        checkRestore(checkpointOf(plan('unbounded-clicks', counts), 'unbounded-clicks'), p, 'clicks-per-minute', true),
      {
        code: 'CLINK_ERR_PLAN',
        message:
          "restore refused: checkpoint 7 was taken of job 'unbounded-clicks', this job is 'clicks-per-minute'; restore it into the job it was taken of",
      },
    );
  });

  test('state of an operator the job no longer has is refused, naming it, unless --allow-non-restored-state drops it', () => {
    const before = plan('j', countsAndSums);
    const after = plan('j', counts);
    assert.throws(() => checkRestore(checkpointOf(before, 'j'), after, 'j', false), {
      message:
        /^restore refused: checkpoint 7 holds state for operators this job no longer has: sums.*; submit with --allow-non-restored-state to drop it$/,
    });
    const d = checkRestore(checkpointOf(before, 'j'), after, 'j', true);
    assert.ok(d.dropped.includes('sums'), d.dropped.join(','));
    assert.equal(d.graphChanged, true);
    assert.ok(d.restoredTasks.has('counts'));
  });

  test('an operator added since starts empty; the rest restores', () => {
    const d = checkRestore(checkpointOf(plan('j', counts), 'j'), plan('j', countsAndSums), 'j', false);
    assert.deepEqual(d.fresh, ['sums']);
    assert.ok(d.restoredTasks.has('counts'));
  });

  test('a chain that changed is refused, naming the task and both chains', () => {
    const before = plan('j', (env) =>
      env
        .fromSequence(1, 9)
        .map((x) => x + 1)
        .collect(),
    );
    const after = plan('j', (env) =>
      env
        .fromSequence(1, 9)
        .map((x) => x + 1)
        .filter((x) => x > 2)
        .collect(),
    );
    assert.throws(() => checkRestore(checkpointOf(before, 'j'), after, 'j', true), {
      message:
        /^restore refused: checkpoint 7 does not fit this plan: task \S+'s chain was .* -> .*, the plan has .*filter.*; submit the job as it was when the checkpoint was taken$/,
    });
  });

  test('another parallelism restores rescaled, saying which tasks and from what parallelism', () => {
    const d = checkRestore(checkpointOf(plan('j', counts, 2), 'j'), plan('j', counts, 3), 'j', false);
    assert.deepEqual([...d.rescaled].sort(), [
      ['_inline_source_0', 2],
      ['counts', 2],
    ]);
    assert.equal(d.restoredTasks.size, 2);
  });

  test('another parallelism is refused, naming the connector, for a task whose connector cannot divide its state', () => {
    const pg = (env: JobEnvironment) =>
      env
        .fromSource('postgres', { connectionString: 'postgres://x', table: 't', keyColumn: 'id' })
        .keyBy((x) => String(x))
        .count()
        .uid('counts')
        .collect();
    assert.throws(() => checkRestore(checkpointOf(plan('j', pg, 2), 'j'), plan('j', pg, 3), 'j', false), {
      code: 'CLINK_ERR_PLAN',
      message:
        /^restore layout differs: checkpoint 7 holds state for 4 subtasks, the plan deploys 6 \(task _inline_source_0 at 2, the plan 3: source '.*' \(connector postgres\) cannot divide its positions among another number of subtasks\); submit those at the parallelism the checkpoint was taken at$/,
    });
  });

  test('a marker from before identities were recorded is checked by its subtask set alone', () => {
    const p = plan('j', counts);
    assert.equal(
      checkRestore(
        { checkpointId: 3, subtasks: p.subtasks.map((s) => `${s.taskId}#${s.index}`) },
        p,
        'other-name',
        false,
      ).restoredTasks.size,
      p.tasks.length,
    );
    assert.throws(
      () => checkRestore({ checkpointId: 3, subtasks: ['x#0'] }, p, 'j', false),
      /restore layout differs: checkpoint 3 holds state for 1 subtasks/,
    );
  });
});
