/**
 * A job's lifecycle: its states and the one table of legal transitions. Every change of a job's state
 * goes through `transition()`, which throws on a move the table does not list: a bug, caught where it
 * happens instead of showing later as a job stuck in a state nothing leaves.
 *
 *   DEPLOYING  -> RUNNING      every subtask listens; PeerUpdates sent
 *   DEPLOYING  -> RESTARTING   a worker lost, or a subtask failed, with restarts left (checkpointed job)
 *   DEPLOYING  -> FINISHED     every subtask finished before the job was seen running
 *   RUNNING    -> RESTARTING   as from DEPLOYING
 *   RUNNING    -> FINISHED     every subtask finished (and a final checkpoint, if any, completed)
 *   RUNNING    -> RESCALING    a rescale's checkpoint completed: the job drains to be deployed again
 *   RESTARTING -> DEPLOYING    survivors drained, slots found: the next attempt is deployed
 *   RESCALING  -> DEPLOYING    drained (a worker lost meanwhile changes nothing): deployed at the new parallelism
 *   any live   -> FAILED       a failure with no restart or retry left, a drain or capacity timeout
 *   any live   -> CANCELED     a client's cancel, a savepoint with --cancel
 *
 * Retries of a failover region (jobs without checkpoints) happen inside RUNNING: the job stays RUNNING
 * while the region drains and is deployed again.
 */

import { isRedeployingJobState, isTerminalJobState, JOB_TRANSITIONS, type JobStateName } from '../protocol/index.js';

export { JOB_TRANSITIONS, type JobStateName };

export class IllegalTransitionError extends Error {
  constructor(
    readonly from: JobStateName,
    readonly to: JobStateName,
    what: string,
  ) {
    super(
      `illegal job state transition ${from} -> ${to} (${what}); legal from ${from}: ${JOB_TRANSITIONS[from].join(', ') || 'none (terminal)'}`,
    );
    this.name = 'IllegalTransitionError';
  }
}

/** Draining to be deployed again: after a failure (RESTARTING) or for a rescale (RESCALING). */
export const isRedeploying: (state: JobStateName) => boolean = isRedeployingJobState;

/** A state nothing leaves. */
export const isTerminal: (state: JobStateName) => boolean = isTerminalJobState;

/** The state to move to, once the table allows it. `what` names the job in the error. */
export function transition(from: JobStateName, to: JobStateName, what = 'a job'): JobStateName {
  if (!(JOB_TRANSITIONS[from] as readonly JobStateName[]).includes(to))
    throw new IllegalTransitionError(from, to, what);
  return to;
}
