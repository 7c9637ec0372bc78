// The rescaler's checks of a request, before anything stops (in-process, on built plans).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chainTargets, parallelismChanges, targetRefusal } from '../../src/coordinator/rescaler.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

const job = defineJob({ name: 'j', version: '1' }, (env: JobEnvironment) => {
  env
    .fromElements([1, 2])
    .keyBy((x) => x)
    .map((x) => x)
    .uid('m')
    .filter(() => true)
    .uid('f')
    .collect();
});
const plan = (p: number, parallelismOf: Record<string, number> = {}) =>
  createPhysicalPlan(buildJob(job, { parallelism: p, parallelismOf }).spec);

test('targets are refused naming what is wrong and what would work', () => {
  const spec = plan(2).spec;
  assert.equal(
    targetRefusal(spec, { parallelism: 0, operators: {} }),
    'nothing to rescale: give --parallelism or --operator <uid>=<n>',
  );
  assert.match(
    targetRefusal(spec, { parallelism: 0, operators: { nope: 2 } })!,
    /^job 'j' has no operator 'nope'; its operators are _inline_source_0, m, f, /,
  );
  assert.equal(
    targetRefusal(spec, { parallelism: 0, operators: { _inline_source_0: 2 } }),
    "operator '_inline_source_0' runs at parallelism 1 only; reachable values: 1",
  );
  assert.equal(
    targetRefusal(spec, { parallelism: 0, operators: { m: 0 } }),
    "operator 'm': parallelism must be a whole number >= 1, got 0",
  );
  assert.equal(targetRefusal(spec, { parallelism: 3, operators: { m: 4 } }), undefined);
});

test('an operator target covers its whole chain, so the chain stays whole', () => {
  const now = plan(2);
  assert.deepEqual(
    Object.keys(chainTargets(now, { m: 4 })).sort(),
    now.tasks
      .find((t) => t.id === 'm')!
      .operators.map((o) => o.id)
      .sort(),
  );
  const next = plan(2, chainTargets(now, { m: 4 }));
  assert.deepEqual(parallelismChanges(now, next), ['m 2 -> 4']);
  assert.equal(next.tasks.length, now.tasks.length, 'no chain split');
});
