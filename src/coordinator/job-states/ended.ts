/**
 * FINISHED, FAILED and CANCELED: the states nothing leaves. A job fails (or is cancelled) at once: its
 * running subtasks are told to stop. It ends (finishedAt set, its client told) only once every subtask
 * has finished and nothing more is to come: no restart, no retry, no final checkpoint, no marker being
 * written.
 */
import { subtaskKey } from '../../plan/index.js';
import { makeMessage } from '../../protocol/index.js';
import { jobDir } from '../checkpoint-storage.js';
import { isRedeploying, isTerminal } from '../job-lifecycle.js';
import type { SubtaskState } from '../job-state.js';
import type { JobOps } from './job-ops.js';

/** Entering FAILED or CANCELED: every subtask still running is told to stop. */
export function enterFailed(ops: JobOps, error: string, state: 'FAILED' | 'CANCELED'): void {
  const { job, services } = ops;
  if (isTerminal(job.state)) return;
  ops.moveTo(state);
  job.error = error;
  job.retrying.clear();
  const cancel = (): void => ops.post(makeMessage('CancelJob', { jobId: job.id, reason: error }));
  // A checkpoint completing as a client cancels: its CommitCheckpoint goes first, so its sinks make it visible before they stop.
  const marker = job.checkpointing.markerWritten();
  if (state === 'CANCELED' && marker) void marker.finally(cancel);
  else cancel();
  services.log.warn(
    { jobId: job.id, state },
    `job ${job.id} (${job.name}) ${state === 'CANCELED' ? 'cancelled' : 'failed'}: ${error}`,
  );
  // A restart or retry of this job waiting for slots gives up now.
  services.capacityChanged();
}

/** Fail the job naming each subtask that did not drain and its worker; those count as finished. */
export function failUndrained(ops: JobOps, what: string, stuck: SubtaskState[]): void {
  ops.fail(
    `${what}: not drained within ${ops.services.config.restartDrainTimeoutMs} ms: ${stuck.map((t) => `${subtaskKey(t.taskId, t.index)} on worker ${t.session.id}`).join(', ')}`,
  );
  for (const t of stuck) ops.finishSubtask(t, 'did not drain');
  ops.maybeComplete();
}

/** The job ends once every subtask has finished and nothing (a restart, a retry, a final checkpoint) is still to come. */
export function maybeEnd(ops: JobOps, onEnded: () => void): void {
  const { job, services } = ops;
  if (
    job.finishedAt !== undefined ||
    isRedeploying(job.state) ||
    job.retrying.size > 0 ||
    !job.subtasks.every((t) => t.finished)
  )
    return;
  // A subtask may finish before its ack of the final checkpoint arrives: the job ends with its marker.
  if (job.state === 'RUNNING' && job.checkpointing.holdsCompletion()) return;
  // A checkpoint whose acks were all in is still writing its marker (and pruning older ones): a client
  // told the job ended would restore from the checkpoint before it, whose state retention is deleting.
  const marker = job.checkpointing.markerWritten();
  if (marker) {
    void marker.finally(() => ops.maybeComplete());
    return;
  }
  if (job.state === 'DEPLOYING' || job.state === 'RUNNING') ops.moveTo('FINISHED');
  job.finishedAt = services.clock.now();
  services.metrics.jobsEnded.inc({ state: job.state });
  services.log.info(
    { jobId: job.id, state: job.state },
    `job ${job.id} (${job.name}) ${job.state.toLowerCase()} in ${job.finishedAt - job.startedAt} ms`,
  );
  const owed = job.checkpointing.commits.owedCheckpoints;
  if (owed.length > 0 && job.checkpoint.checkpointDir) {
    // Prepared, durable, perhaps not visible: only a restore of this job's checkpoints commits it.
    services.log.warn(
      { jobId: job.id, owed },
      `job ${job.id} (${job.name}) ended with the commits of checkpoint ${owed.join(', ')} not confirmed by its sinks: what they prepared is durable but may not be visible; submit it again with --restore-from-dir ${jobDir(job.checkpoint.checkpointDir, job.id)} to finish them`,
    );
  }
  onEnded();
}
