// The mesh run's topology fingerprint: the same job, module and settings give the same one on every
// member; each way two members can disagree is named in one line (in-process, on built plans).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shapeDifference, topologyFingerprint, topologyShape } from '../../src/mesh/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

const job = defineJob({ name: 'm', version: '1' }, (env: JobEnvironment) => {
  env
    .fromSequence(1, 100)
    .keyBy((x) => x % 5)
    .map((x) => x)
    .uid('work')
    .print();
});
const shape = (p: number, module = 'a'.repeat(64), parallelismOf: Record<string, number> = {}) =>
  topologyShape(buildJob(job, { parallelism: p, parallelismOf }).spec, module);

test('the same job, module and parallelism: the same fingerprint, nothing to name', () => {
  assert.equal(topologyFingerprint(shape(2)), topologyFingerprint(shape(2)));
  assert.match(topologyFingerprint(shape(2)), /^[0-9a-f]{64}$/);
  assert.equal(shapeDifference(shape(2), shape(2)), undefined);
});

test('a different parallelism, module or graph is named', () => {
  assert.notEqual(topologyFingerprint(shape(2)), topologyFingerprint(shape(3)));
  assert.equal(
    shapeDifference(shape(2), shape(2, 'a'.repeat(64), { work: 4 })),
    "task 'work' runs at parallelism 2 at the leader and 4 here; give every member the same -p and params",
  );
  assert.equal(
    shapeDifference(shape(2), shape(2, 'b'.repeat(64))),
    'the job module differs: the leader runs aaaaaaaaaaaa, this worker bbbbbbbbbbbb; start every member with the same job file and version',
  );
  const other = defineJob(
    { name: 'm', version: '1' },
    (env: JobEnvironment) =>
      void env
        .fromSequence(1, 100)
        .map((x) => x)
        .uid('work2')
        .print(),
  );
  const theirs = topologyShape(buildJob(other, { parallelism: 2 }).spec, 'a'.repeat(64));
  assert.match(
    shapeDifference(theirs, shape(2))!,
    /^task '_inline_source_0' chains _inline_source_0:source -> work2:map -> .* at the leader and _inline_source_0:source here$/,
  );
});
