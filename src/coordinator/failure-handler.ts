/**
 * What a failure does to a job, decided in one place: a worker lost, a subtask that failed, or a broken
 * peer connection no loss verdict explained. One of three outcomes, as Flink's ExecutionFailureHandler:
 *
 * - restart: a job with checkpoints restarts whole from its last completed one, while its restart
 *   budget lasts (`--max-restarts-from-checkpoint`, default 10);
 * - retry: a job without checkpoints re-runs the failed subtask's failover region from the beginning,
 *   while that subtask's retries last (`--max-region-retries`, default 0); only a failure that names a
 *   subtask can be retried, and only while the job runs;
 * - fail: otherwise, with a reason that says why it was not healed (budget spent, healing off), and at
 *   once for a fatal failure (a deploy that cannot work: healing would fail the same way).
 *
 * A restart waits before it redeploys (restartBackoffMs): the first of a run of restarts at once, then
 * longer each time. A run ends when the job completes a checkpoint: it ran well again, so the next
 * failure is a first. The budget is forgiven by a checkpoint that completes long enough after the last
 * restart (restartsSpentAfterCheckpoint). A redeploy that storage refused is one more restart of the
 * budget (decideRedeployRetry). These functions are pure and are the only place the restart count,
 * its reset and the backoff are decided: the coordinator hands them the job's facts and carries out
 * what they return.
 */
import type { JobStateName } from './job-lifecycle.js';

export interface Failure {
  /** What happened, as the job's error would read. */
  error: string;
  /** The subtask that failed (`<task>#<index>`), when one did; a worker loss names none. */
  subtask?: string;
  /** The restart cause to record, when it differs from `error` (a subtask's failure names its worker). */
  restartCause?: string;
  /** Cannot be healed: fail at once. */
  fatal?: boolean;
}

export interface FailureContext {
  state: JobStateName;
  /** The job takes checkpoints (it restarts from them; it never retries regions). */
  checkpointed: boolean;
  /** The coordinator is shutting down: nothing is healed. */
  stopping: boolean;
  restartsSpent: number;
  /** Restarts the job may spend (0 without checkpoints). */
  maxRestarts: number;
  /** Retries `subtask` has spent. */
  retriesSpent: (subtask: string) => number;
  /** Retries each subtask of a job without checkpoints may spend. */
  maxRetries: number;
  /** Restarts since the job last completed a checkpoint (the run of restarts this one would extend). */
  restartsSinceCheckpoint: number;
  /** --restart-backoff-initial-ms and --restart-backoff-max-ms. */
  backoff: { initialMs: number; maxMs: number };
}

/**
 * How long the `n`th restart of a run (or a subtask's `n`th retry) waits: 0 for the first, then
 * doubling from `initialMs`, capped at `maxMs`.
 */
export function restartBackoffMs(n: number, initialMs: number, maxMs: number): number {
  if (n <= 1) return 0;
  return Math.min(maxMs, initialMs * 2 ** Math.min(n - 2, 30));
}

/** The first line of an error (a user error carries its stack after it): how a failure is named in one line. */
export const firstLine = (text: string): string => text.split('\n')[0]!;

export type FailureDecision =
  | { action: 'restart'; cause: string; backoffMs: number; restartsSpent: number }
  | { action: 'retry'; subtask: string; retry: number; backoffMs: number }
  | { action: 'fail'; reason: string };

const live = (s: JobStateName): boolean => s === 'RUNNING' || s === 'DEPLOYING';

export function decideFailure(ctx: FailureContext, failure: Failure): FailureDecision {
  if (failure.fatal) return { action: 'fail', reason: failure.error };
  if (!ctx.stopping && live(ctx.state) && ctx.checkpointed && ctx.restartsSpent < ctx.maxRestarts) {
    return {
      action: 'restart',
      cause: failure.restartCause ?? failure.error,
      backoffMs: restartBackoffMs(ctx.restartsSinceCheckpoint + 1, ctx.backoff.initialMs, ctx.backoff.maxMs),
      restartsSpent: ctx.restartsSpent + 1,
    };
  }
  const s = failure.subtask;
  if (
    s !== undefined &&
    !ctx.stopping &&
    ctx.state === 'RUNNING' &&
    !ctx.checkpointed &&
    ctx.retriesSpent(s) < ctx.maxRetries
  ) {
    const retry = ctx.retriesSpent(s) + 1;
    return {
      action: 'retry',
      subtask: s,
      retry,
      backoffMs: restartBackoffMs(retry, ctx.backoff.initialMs, ctx.backoff.maxMs),
    };
  }
  return { action: 'fail', reason: refusal(ctx, failure) };
}

/** Why a failure fails the job instead of being healed. */
function refusal(ctx: FailureContext, failure: Failure): string {
  const { error, subtask } = failure;
  if (!live(ctx.state) || ctx.stopping) return error;
  if (ctx.checkpointed) {
    return ctx.maxRestarts === 0
      ? `${error}; restarts are off (--max-restarts-from-checkpoint 0)`
      : `${error}; the ${ctx.maxRestarts} restarts allowed are spent`;
  }
  if (subtask === undefined || ctx.state !== 'RUNNING' || ctx.maxRetries === 0) return error;
  return `${error}; subtask ${subtask} failed ${ctx.maxRetries + 1} times and the ${ctx.maxRetries} retries allowed (--max-region-retries ${ctx.maxRetries}) are spent`;
}

/** Restarts since the job last completed a checkpoint (`lastCompletedAt`): a completed one after a restart ends the run. */
export function restartsSinceCheckpoint(restartTimes: readonly number[], lastCompletedAt: number | undefined): number {
  const since = lastCompletedAt ?? -Infinity;
  return restartTimes.filter((at) => at > since).length;
}

/**
 * The restarts spent once a checkpoint completed at `completedAt`: forgiven (0) when it came at least
 * `resetAfterMs` (--restart-budget-reset-after-ms) after the last restart's redeploy, the job having run
 * well that long; unchanged otherwise.
 */
export function restartsSpentAfterCheckpoint(
  spent: number,
  lastRestartDeployedAt: number | undefined,
  completedAt: number,
  resetAfterMs: number,
): number {
  if (spent === 0 || lastRestartDeployedAt === undefined) return spent;
  return completedAt - lastRestartDeployedAt >= resetAfterMs ? 0 : spent;
}

/**
 * A redeploy storage refused (its RESTORED record on a full disk, a marker it could not read), after
 * `tries` such refusals of this restart: tried again as one more restart of the budget, with the
 * backoff that restart would have; undefined when the budget is spent.
 */
export function decideRedeployRetry(
  ctx: Pick<FailureContext, 'restartsSpent' | 'maxRestarts' | 'restartsSinceCheckpoint' | 'backoff'>,
  tries: number,
): { restartsSpent: number; backoffMs: number } | undefined {
  if (ctx.restartsSpent >= ctx.maxRestarts) return undefined;
  return {
    restartsSpent: ctx.restartsSpent + 1,
    backoffMs: restartBackoffMs(ctx.restartsSinceCheckpoint + tries + 1, ctx.backoff.initialMs, ctx.backoff.maxMs),
  };
}
