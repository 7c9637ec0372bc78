import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  decideFailure,
  decideRedeployRetry,
  restartsSinceCheckpoint,
  restartsSpentAfterCheckpoint,
  type FailureContext,
} from '../../src/coordinator/index.js';

const checkpointed = (over: Partial<FailureContext> = {}): FailureContext => ({
  state: 'RUNNING',
  checkpointed: true,
  stopping: false,
  restartsSpent: 0,
  maxRestarts: 10,
  retriesSpent: () => 0,
  maxRetries: 0,
  restartsSinceCheckpoint: 0,
  backoff: { initialMs: 1_000, maxMs: 60_000 },
  ...over,
});
const plain = (over: Partial<FailureContext> = {}): FailureContext =>
  checkpointed({ checkpointed: false, maxRestarts: 0, maxRetries: 2, ...over });
const lost = { error: 'worker lost: w1 (heartbeat timeout)' };
const failed = { error: 'boom', subtask: 'map#1', restartCause: 'subtask map#1 failed on worker w2: boom' };

describe('the failure handler: restart, retry a region, or fail, decided once', () => {
  test('a checkpointed job restarts while its budget lasts, from RUNNING or DEPLOYING, recording the cause', () => {
    assert.deepEqual(decideFailure(checkpointed(), lost), {
      action: 'restart',
      cause: lost.error,
      backoffMs: 0,
      restartsSpent: 1,
    });
    assert.deepEqual(decideFailure(checkpointed({ state: 'DEPLOYING', restartsSpent: 9 }), failed), {
      action: 'restart',
      cause: failed.restartCause,
      backoffMs: 0,
      restartsSpent: 10,
    });
  });

  test('restarts in a row back off, 0 then 1 s doubling; a checkpoint completed since the last restart ends the run', () => {
    const backoff = (restartsSinceCheckpoint: number, restartsSpent = restartsSinceCheckpoint): number => {
      const d = decideFailure(checkpointed({ restartsSinceCheckpoint, restartsSpent }), lost);
      assert.equal(d.action, 'restart');
      return (d as { backoffMs: number }).backoffMs;
    };
    assert.deepEqual(
      [0, 1, 2, 3, 7, 8].map((n) => backoff(n)),
      [0, 1_000, 2_000, 4_000, 60_000, 60_000],
    );
    // Six restarts spent, the last one followed by a completed checkpoint: the next is a first again.
    assert.equal(backoff(0, 6), 0);
  });

  test('a spent budget, or restarts off, fail the job saying which, whatever kind of failure it was', () => {
    for (const f of [lost, failed, { error: 'peer lost', subtask: 'map#0' }]) {
      assert.deepEqual(decideFailure(checkpointed({ restartsSpent: 10 }), f), {
        action: 'fail',
        reason: `${f.error}; the 10 restarts allowed are spent`,
      });
      assert.deepEqual(decideFailure(checkpointed({ maxRestarts: 0 }), f), {
        action: 'fail',
        reason: `${f.error}; restarts are off (--max-restarts-from-checkpoint 0)`,
      });
    }
  });

  test('a fatal failure fails at once, budget or not', () => {
    assert.deepEqual(decideFailure(checkpointed(), { ...failed, fatal: true }), { action: 'fail', reason: 'boom' });
    assert.deepEqual(decideFailure(plain(), { ...failed, fatal: true }), { action: 'fail', reason: 'boom' });
  });

  test('a job without checkpoints retries the failed subtask’s region while that subtask’s retries last, only while RUNNING', () => {
    assert.deepEqual(decideFailure(plain(), failed), { action: 'retry', subtask: 'map#1', retry: 1, backoffMs: 0 });
    assert.deepEqual(decideFailure(plain({ retriesSpent: (s) => (s === 'map#1' ? 1 : 0) }), failed), {
      action: 'retry',
      subtask: 'map#1',
      retry: 2,
      backoffMs: 1_000,
    });
    assert.deepEqual(decideFailure(plain({ retriesSpent: () => 2 }), failed), {
      action: 'fail',
      reason: 'boom; subtask map#1 failed 3 times and the 2 retries allowed (--max-region-retries 2) are spent',
    });
    assert.deepEqual(decideFailure(plain({ state: 'DEPLOYING' }), failed), { action: 'fail', reason: 'boom' });
    assert.deepEqual(decideFailure(plain({ maxRetries: 0 }), failed), { action: 'fail', reason: 'boom' });
  });

  test('a worker loss names no subtask: a job without checkpoints fails with the loss as it is', () => {
    assert.deepEqual(decideFailure(plain(), lost), { action: 'fail', reason: lost.error });
  });

  test('nothing is healed while the coordinator stops, and a job no longer live fails with the bare error', () => {
    assert.deepEqual(decideFailure(checkpointed({ stopping: true }), lost), { action: 'fail', reason: lost.error });
    assert.deepEqual(decideFailure(plain({ stopping: true }), failed), { action: 'fail', reason: 'boom' });
    assert.deepEqual(decideFailure(checkpointed({ state: 'RESTARTING' }), failed), { action: 'fail', reason: 'boom' });
  });

  test('the run of restarts is those after the last completed checkpoint', () => {
    assert.equal(restartsSinceCheckpoint([10, 20, 30], undefined), 3);
    assert.equal(restartsSinceCheckpoint([10, 20, 30], 25), 1);
    assert.equal(restartsSinceCheckpoint([10, 20, 30], 30), 0);
  });

  test('a checkpoint completed --restart-budget-reset-after-ms after the last redeploy forgives the restarts spent; an earlier one does not', () => {
    assert.equal(restartsSpentAfterCheckpoint(4, 1_000, 1_000 + 600_000, 600_000), 0);
    assert.equal(restartsSpentAfterCheckpoint(4, 1_000, 1_000 + 599_999, 600_000), 4);
    assert.equal(restartsSpentAfterCheckpoint(0, 1_000, 10_000_000, 600_000), 0);
    assert.equal(
      restartsSpentAfterCheckpoint(2, undefined, 10_000_000, 600_000),
      2,
      'no restart recorded: nothing to forgive',
    );
  });

  test('a redeploy storage refused is one more restart of the budget, backing off as the restart after it would; none once spent', () => {
    const ctx = {
      restartsSpent: 3,
      maxRestarts: 10,
      restartsSinceCheckpoint: 1,
      backoff: { initialMs: 1_000, maxMs: 60_000 },
    };
    assert.deepEqual(decideRedeployRetry(ctx, 1), { restartsSpent: 4, backoffMs: 2_000 });
    assert.deepEqual(decideRedeployRetry(ctx, 2), { restartsSpent: 4, backoffMs: 4_000 });
    assert.equal(decideRedeployRetry({ ...ctx, restartsSpent: 10 }, 1), undefined);
  });
});
