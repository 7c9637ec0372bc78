// Placement from membership: every member computes the same slices from the sorted member set, every
// subtask placed once, pipeline instances spread; too few slots is refused saying what would do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { meshPlacement } from '../../src/mesh/index.js';
import { createPhysicalPlan, subtaskKey } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

const job = defineJob({ name: 'm', version: '1' }, (env: JobEnvironment) => {
  env
    .fromSequence(1, 100)
    .keyBy((x) => x % 5)
    .map((x) => x)
    .uid('work')
    .print();
});
const plan = (p: number) => createPhysicalPlan(buildJob(job, { parallelism: p }).spec);
const members = ['10.0.0.1:7000', '10.0.0.2:7000', '10.0.0.3:7000'];

test('every member derives the same slices, each subtask once, instances spread over the members', () => {
  const a = meshPlacement(plan(6), members);
  const b = meshPlacement(plan(6), [...members]);
  assert.deepEqual(a, b);
  const keys = a.flat().map((s) => subtaskKey(s.taskId, s.index));
  assert.equal(new Set(keys).size, keys.length);
  assert.deepEqual(new Set(keys), new Set(plan(6).subtasks.map((s) => subtaskKey(s.taskId, s.index))));
  // 6 pipeline instances over 3 members of 2 slots: two whole instances each.
  assert.deepEqual(
    a.map((slice) => new Set(slice.map((s) => s.index)).size),
    [2, 2, 2],
  );
});

test('too few slots for the job is refused, naming the need and the offer', () => {
  assert.throws(
    () => meshPlacement(plan(6), members, 1),
    /^MeshError: the job needs 6 slots \(slot sharing group 'default': 6\) and 3 members of 1 slots offer 3; add members or give each more --slots$/,
  );
});
