// Restoring a checkpoint older than what a job's sinks may have committed (coordinator/fallback.ts):
// refused where a transactional sink would publish again what it committed, unless duplicates are
// allowed; logged naming the sinks otherwise.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { judgeFallback, type FallbackCase } from '../../src/coordinator/fallback.js';
import { jobGuarantee } from '../../src/connectors/index.js';
import '../../src/connectors/index.js';
import { createPhysicalPlan } from '../../src/plan/index.js';
import { buildJob, defineJob, type JobEnvironment } from '../../src/sdk/index.js';

const planOf = (build: (env: JobEnvironment) => void) =>
  createPhysicalPlan(buildJob(defineJob({ name: 'f', version: '1' }, build), { parallelism: 2 }).spec);
const withFileSink = planOf((env) => void env.fromSequence(1, 10).sinkTo('file', { path: '/tmp/o' }).name('files'));
const withPrint = planOf((env) => void env.fromSequence(1, 10).print().name('console'));
const withNats = planOf(
  (env) =>
    void env.fromSequence(1, 10).sinkTo('nats', { servers: 'h:1', subject: 's', messageIdPrefix: 'p' }).name('to nats'),
);

const damaged = (restored: number, plan = withFileSink, allowed = false): FallbackCase => ({
  what: 'job j1',
  to: `checkpoint ${restored}`,
  restored,
  point: { skipped: [{ checkpointId: 3, reason: 'state file /c/chk-3/a#0.state is damaged' }], committedThrough: 3 },
  plan,
  allowed,
});

describe('falling back to an older checkpoint', () => {
  test('past a checkpoint a transactional sink committed: refused, naming the checkpoint, the sink and the flag', () => {
    assert.throws(
      () => judgeFallback(damaged(2)),
      (e: Error) =>
        e.message ===
        "checkpoint 3 is unusable (state file /c/chk-3/a#0.state is damaged); job j1 cannot fall back to checkpoint 2: sinks 'files' (file) would publish again what they committed up to checkpoint 3; repair the damaged files of checkpoint 3, or restore with --allow-duplicates-on-fallback to accept those duplicates (the job is then at-least-once)",
    );
  });

  test('allowed: it goes ahead, and the line names the sinks that publish again', () => {
    assert.equal(
      judgeFallback(damaged(2, withFileSink, true)),
      "checkpoint 3 is unusable (state file /c/chk-3/a#0.state is damaged); job j1 falls back to checkpoint 2: sinks 'files' (file) publish again what they committed after it (--allow-duplicates-on-fallback)",
    );
  });

  test('an at-least-once sink writes again (no refusal: that is its guarantee); one with message ids repeats nothing', () => {
    assert.equal(
      judgeFallback(damaged(2, withPrint)),
      "checkpoint 3 is unusable (state file /c/chk-3/a#0.state is damaged); job j1 falls back to checkpoint 2: sinks 'console' (print) write again what they wrote after it",
    );
    assert.equal(
      judgeFallback(damaged(2, withNats)),
      'checkpoint 3 is unusable (state file /c/chk-3/a#0.state is damaged); job j1 falls back to checkpoint 2 (its sinks repeat nothing a replay writes)',
    );
  });

  test('no newer checkpoint passed over and nothing committed past it: no fallback', () => {
    assert.equal(judgeFallback({ ...damaged(3), point: { skipped: [], committedThrough: 3 } }), undefined);
  });

  test('an older checkpoint named while the COMMITTED record says later ones were committed: refused the same way', () => {
    assert.throws(
      () => judgeFallback({ ...damaged(2), point: { skipped: [], committedThrough: 5 } }),
      /^StateError: the commits of checkpoints up to 5 were confirmed; job j1 cannot fall back to checkpoint 2: .*; restore the newest checkpoint, or restore with --allow-duplicates-on-fallback/,
    );
  });

  test('every checkpoint of its own damaged: the restore point it was submitted with is a fallback too', () => {
    assert.throws(
      () => judgeFallback({ ...damaged(0), to: 'the restore point it was submitted with' }),
      /cannot fall back to the restore point it was submitted with/,
    );
  });

  test('a job that allows duplicates on fallback reports at-least-once when a sink would publish again', () => {
    const ops = withFileSink.spec.operators;
    assert.deepEqual(jobGuarantee(ops, true, 0, false), { level: 'exactly-once', limitedBy: '' });
    assert.deepEqual(jobGuarantee(ops, true, 0, true), {
      level: 'at-least-once',
      limitedBy: "--allow-duplicates-on-fallback (a restore older than what sink 'files' committed writes that again)",
    });
    assert.deepEqual(
      jobGuarantee(withNats.spec.operators, true, 0, true),
      { level: 'exactly-once', limitedBy: '' },
      'nothing it writes is seen twice',
    );
  });
});
