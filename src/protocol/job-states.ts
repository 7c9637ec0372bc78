/**
 * A job's states and the moves between them: the one table. The coordinator enforces it
 * (coordinator/job-lifecycle.ts says what each move means); clients, the CLI, the HTTP schema and the
 * wire description read their lists of states from it.
 */

export const JOB_TRANSITIONS = Object.freeze({
  DEPLOYING: ['RUNNING', 'RESTARTING', 'FINISHED', 'FAILED', 'CANCELED'],
  RUNNING: ['RESTARTING', 'RESCALING', 'FINISHED', 'FAILED', 'CANCELED'],
  RESTARTING: ['DEPLOYING', 'FAILED', 'CANCELED'],
  RESCALING: ['DEPLOYING', 'FAILED', 'CANCELED'],
  FINISHED: [],
  FAILED: [],
  CANCELED: [],
} as const);

export type JobStateName = keyof typeof JOB_TRANSITIONS;

/** Every state, in the table's order. */
export const JOB_STATES = Object.freeze(Object.keys(JOB_TRANSITIONS) as JobStateName[]);

/** A state nothing leaves. Takes any string, as a client reads it off the wire. */
export function isTerminalJobState(state: string): boolean {
  return state in JOB_TRANSITIONS && JOB_TRANSITIONS[state as JobStateName].length === 0;
}

/** Draining to be deployed again: after a failure (RESTARTING) or for a rescale (RESCALING). */
export function isRedeployingJobState(state: string): boolean {
  return state === 'RESTARTING' || state === 'RESCALING';
}
