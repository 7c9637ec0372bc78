/**
 * Retries of a failover region, in a job without checkpoints: they happen inside RUNNING. A subtask
 * failed: the rest of its region (the subtasks it shares channels with, directly or not) is stopped and,
 * once drained and its backoff waited, deployed again from the beginning as the next attempt. Its
 * sources re-read their input and its state starts empty, so each record reaches the region's sinks at
 * least once; the job's other regions run on untouched.
 */
import { subtaskKey } from '../../plan/index.js';
import { makeMessage } from '../../protocol/index.js';
import { firstLine, type FailureDecision } from '../failure-handler.js';
import type { JobState, SubtaskState, WorkerSession } from '../job-state.js';
import { placementSubtasks } from '../placement.js';
import { describeRestorePoint } from '../restore-points.js';
import { failUndrained } from './ended.js';
import type { JobOps } from './job-ops.js';

/** Retries each subtask of a job without checkpoints may spend: the job's own setting, else the coordinator's. */
export function maxRetries(job: JobState, maxRegionRetries: number): number {
  return job.checkpoint.maxRestarts >= 0 ? job.checkpoint.maxRestarts : maxRegionRetries;
}

/** Subtask `st` failed with retries left: stop its region, and deploy it again once drained. */
export function beginRetry(
  ops: JobOps,
  st: SubtaskState,
  cause: string,
  { retry, backoffMs }: Extract<FailureDecision, { action: 'retry' }>,
): void {
  const { job, services } = ops;
  const key = subtaskKey(st.taskId, st.index);
  const region = job.regionOf.get(key)!;
  const size = job.regions[region]!.length;
  job.retriesBySubtask.set(key, retry);
  job.retrying.set(region, {
    at: services.clock.now(),
    subtask: key,
    workerId: st.session.id,
    cause,
    retry,
    subtasks: size,
    backoffMs,
  });
  if (job.peerFailure && job.regionOf.get(job.peerFailure.subtask) === region) delete job.peerFailure;
  services.metrics.subtaskRetries.inc();
  const max = maxRetries(job, services.config.maxRegionRetries);
  services.log.warn(
    { jobId: job.id, subtask: key, workerId: st.session.id, retry, maxRegionRetries: max, regionSubtasks: size },
    `job ${job.id} (${job.name}): subtask ${key} failed on worker ${st.session.id}; retrying it with its failover region of ${size} subtasks from ${job.submittedRestore ? `checkpoint ${job.submittedRestore.checkpointId}` : 'the beginning'} (retry ${retry} of ${max}): ${firstLine(cause)}`,
  );
  const bySession = new Map<WorkerSession, string[]>();
  for (const t of job.subtasks) {
    const k = subtaskKey(t.taskId, t.index);
    if (t.finished || job.regionOf.get(k) !== region) continue;
    (bySession.get(t.session) ?? bySession.set(t.session, []).get(t.session)!).push(k);
  }
  for (const [s, subtasks] of bySession)
    services.post(
      s,
      makeMessage('CancelJob', { jobId: job.id, reason: `retrying after subtask ${key} failed`, subtasks }),
    );
  maybeRetryRegion(ops, region);
}

/** Once every subtask of a retried region has drained, deploy the region again as the next attempt. */
export function maybeRetryRegion(ops: JobOps, region: number): void {
  const { job, services } = ops;
  const { config } = services;
  const r = job.retrying.get(region);
  const inRegion = (t: { taskId: string; index: number }): boolean =>
    job.regionOf.get(subtaskKey(t.taskId, t.index)) === region;
  if (!r || r.deploying || job.subtasks.some((t) => !t.finished && inRegion(t))) return;
  job.retrying.set(region, { ...r, deploying: true });
  const current = job.retrying.get(region);
  const stillCurrent = (): boolean => job.state === 'RUNNING' && job.retrying.get(region) === current;
  const subtasks = placementSubtasks(job.plan, config.slotSharing, inRegion);
  services.slots
    .wait(r.backoffMs)
    .then(() =>
      services.slots.place(job.id, subtasks, config.restartCapacityTimeoutMs, {
        giveUp: () => !stillCurrent(),
        registrationRestartsClock: true,
      }),
    )
    .then((placement) => {
      if (!stillCurrent()) return;
      job.attempt++;
      job.retrying.delete(region);
      const { deploying: _, backoffMs: _backoff, ...retry } = r;
      job.retries.push({ ...retry, deployedAt: services.clock.now(), attempt: job.attempt });
      // A job without checkpoints of its own resumes its region from the restore point it was submitted with.
      ops.deploy(placement, job.submittedRestore);
      services.log.info(
        { jobId: job.id, attempt: job.attempt, subtask: r.subtask },
        `job ${job.id} (${job.name}): failover region of subtask ${r.subtask} (${subtasks.length} subtasks) redeployed as attempt ${job.attempt} from ${describeRestorePoint(job, job.submittedRestore)}`,
      );
    })
    .catch((err: unknown) => {
      ops.fail(`retry of subtask ${r.subtask} after ${firstLine(r.cause)} failed: ${(err as Error).message}`);
      ops.maybeComplete();
    });
}

/** A retried region whose subtasks neither drain nor die within restartDrainTimeoutMs fails the job, named. */
export function checkRetryDrain(ops: JobOps, now: number): void {
  const { job } = ops;
  for (const [region, r] of job.retrying) {
    if (r.deploying || now - r.at < ops.services.config.restartDrainTimeoutMs) continue;
    failUndrained(
      ops,
      `retry of subtask ${r.subtask}`,
      job.subtasks.filter((t) => !t.finished && job.regionOf.get(subtaskKey(t.taskId, t.index)) === region),
    );
    return;
  }
}
