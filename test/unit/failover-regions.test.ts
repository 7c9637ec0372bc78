import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildJob, defineJob } from '../../src/index.js';
import { createPhysicalPlan, failoverRegions } from '../../src/plan/index.js';
import type { JobEnvironment } from '../../src/sdk/index.js';

const regionsOf = (build: (env: JobEnvironment) => void, parallelism: number): string[][] =>
  failoverRegions(
    createPhysicalPlan(buildJob(defineJob({ name: 'regions', version: '1' }, build), { parallelism }).spec),
  );

describe('failover regions', () => {
  test('a job chained into one task has one region per subtask (a retry re-runs one pipeline instance)', () => {
    const regions = regionsOf(
      (env) =>
        env
          .fromSequence(1, 10)
          .map((x) => x + 1)
          .collect(),
      3,
    );
    assert.deepEqual(regions, [['_inline_source_0#0'], ['_inline_source_0#1'], ['_inline_source_0#2']]);
  });

  test('a shuffle joins every subtask of both sides into one region', () => {
    const regions = regionsOf(
      (env) =>
        env
          .fromSequence(1, 10)
          .keyBy((x) => x % 3)
          .count()
          .collect(),
      2,
    );
    assert.equal(regions.length, 1);
    assert.deepEqual([...regions[0]!].sort(), [
      '_inline_keyedReduce_0#0',
      '_inline_keyedReduce_0#1',
      '_inline_source_0#0',
      '_inline_source_0#1',
    ]);
  });

  test('a broken chain links every upstream subtask to every downstream one (each has a channel to each), so it is one region', () => {
    const regions = regionsOf(
      (env) =>
        env
          .fromSequence(1, 10)
          .map((x) => x)
          .startNewChain()
          .collect(),
      2,
    );
    assert.equal(regions.length, 1);
    assert.equal(regions[0]!.length, 4);
  });

  test('independent pipelines in one job are separate regions', () => {
    const regions = regionsOf((env) => {
      env
        .fromSequence(1, 10)
        .keyBy((x) => x % 2)
        .count()
        .collect('a');
      env
        .fromSequence(1, 10)
        .map((x) => x)
        .collect('b');
    }, 2);
    // one region for the shuffled pipeline, one per subtask of the chained one
    assert.deepEqual(regions.map((r) => r.length).sort(), [1, 1, 4]);
    assert.deepEqual(new Set(regions.flat()).size, 6);
  });
});
