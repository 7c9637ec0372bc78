/**
 * RESTARTING and RESCALING: the job drains to be deployed again. Entering either (enterRedeploy) abandons
 * the attempt the same way: its checkpoint in flight, a peer failure held for a verdict, a hot rescale
 * under way. Once every subtask has drained, the backoff waited and slots found, the job leaves for
 * DEPLOYING (redeploy): the next attempt, from its restore point, with what the restart or rescale
 * records. A survivor that does not drain within --restart-drain-timeout-ms fails the job, named.
 */
import type { Span } from '../../metrics/index.js';
import { slotNeed } from '../../plan/index.js';
import { makeMessage } from '../../protocol/index.js';
import { DEFAULT_SELF_HEAL_RESTARTS } from '../config.js';
import { decideRedeployRetry, restartsSinceCheckpoint, type FailureDecision } from '../failure-handler.js';
import { isRedeploying } from '../job-lifecycle.js';
import { takePlan, type JobState, type StagedRescale } from '../job-state.js';
import { placementSubtasks } from '../placement.js';
import { describeRestorePoint, isStorageFailure, restorePoint } from '../restore-points.js';
import { failUndrained } from './ended.js';
import type { JobOps } from './job-ops.js';

/** The restarts a job may spend on worker losses: none without durable checkpoints. */
export function maxRestarts(job: JobState): number {
  if (!job.checkpoint.checkpointDir) return 0;
  const n = job.checkpoint.maxRestartsOnWorkerLoss;
  return n >= 0 ? n : DEFAULT_SELF_HEAL_RESTARTS;
}

/** Restarts since the job's last completed checkpoint (the backoff grows with them). */
export function restartsSinceLastCheckpoint(job: JobState): number {
  return restartsSinceCheckpoint(
    job.restarts.map((r) => r.at),
    job.checkpointing.history.lastCompletedAt,
  );
}

export function restartBackoff(ops: JobOps): { initialMs: number; maxMs: number } {
  const { config } = ops.services;
  return { initialMs: config.restartBackoffInitialMs, maxMs: config.restartBackoffMaxMs };
}

/** Entering RESTARTING or RESCALING: what every abandoned attempt resets, in one place. */
function enterRedeploy(ops: JobOps, to: 'RESTARTING' | 'RESCALING', cause: string, span: Span): void {
  const job = ops.job;
  ops.moveTo(to);
  job.restarting = { cause, since: ops.services.clock.now(), span };
  job.checkpointing.forget(to === 'RESCALING' ? 'rescaling' : cause);
  delete job.peerFailure;
  // A hot rescale under way is over: the redeploy deploys whichever plan the job had taken.
  delete job.cutover;
}

/** A failure with restarts left: cancel the survivors and, once they have drained, deploy the whole job again. */
export function beginRestart(
  ops: JobOps,
  { cause, backoffMs, restartsSpent }: Extract<FailureDecision, { action: 'restart' }>,
): void {
  const { job, services } = ops;
  const span = services.tracer.start('clink.restart', {
    'clink.job.id': job.id,
    'clink.job.name': job.name,
    'clink.restart.cause': cause,
    'clink.restart.number': restartsSpent + 1,
  });
  enterRedeploy(ops, 'RESTARTING', cause, span);
  job.restartsSpent = restartsSpent;
  job.restarting!.backoffMs = backoffMs;
  services.capacityChanged(); // a retry of this job waiting for slots gives up
  services.metrics.jobRestarts.inc();
  services.log.warn(
    { jobId: job.id, attempt: job.attempt, restartsSpent, maxRestarts: maxRestarts(job), backoffMs },
    `job ${job.id} (${job.name}) restarting after ${cause} (restart ${restartsSpent} of ${maxRestarts(job)}${backoffMs > 0 ? `, in ${backoffMs} ms` : ''})`,
  );
  ops.post(makeMessage('CancelJob', { jobId: job.id, reason: `restarting after ${cause}` }));
  maybeRedeploy(ops);
}

/** A rescale's checkpoint completed: stop the job and, once drained, deploy it from that checkpoint with the staged plan. */
export function beginRescale(ops: JobOps, staged: StagedRescale): void {
  const { job, services } = ops;
  const changes = staged.changes.join(', ');
  const span = services.tracer.start('clink.rescale', {
    'clink.job.id': job.id,
    'clink.job.name': job.name,
    'clink.rescale.mode': 'drain_and_replan',
  });
  enterRedeploy(ops, 'RESCALING', `rescale (${changes})`, span);
  job.rescaling = staged;
  services.log.info(
    { jobId: job.id, checkpointId: staged.checkpointId },
    `job ${job.id} (${job.name}) rescaling (${changes}) from checkpoint ${staged.checkpointId}: draining`,
  );
  ops.post(makeMessage('CancelJob', { jobId: job.id, reason: `rescaling (${changes})` }));
  maybeRedeploy(ops);
}

/** A survivor that neither drains nor dies within restartDrainTimeoutMs fails the job, named. */
export function checkDrain(ops: JobOps, now: number): void {
  const { job } = ops;
  const r = job.restarting;
  // Once every subtask has drained, the restart waits on its backoff and on slots, not on a drain.
  if (!r || now - r.since < ops.services.config.restartDrainTimeoutMs || job.subtasks.every((t) => t.finished)) return;
  failUndrained(
    ops,
    `restart after ${r.cause}`,
    job.subtasks.filter((t) => !t.finished),
  );
}

/** Once every subtask has drained: deploy the next attempt (a storage failure is tried again within the budget). */
export function maybeRedeploy(ops: JobOps): void {
  const { job } = ops;
  if (!isRedeploying(job.state) || !job.subtasks.every((t) => t.finished)) return;
  redeploy(ops).catch((err: unknown) => {
    if (redeployAgain(ops, err)) return;
    job.restarting?.span?.end({ 'clink.restart.outcome': 'failed' }, (err as Error).message);
    const what = job.rescaling
      ? (job.restarting?.cause ?? 'rescale')
      : `restart after ${job.restarting?.cause ?? 'a worker loss'}`;
    ops.fail(`${what} failed: ${(err as Error).message}`);
    ops.maybeComplete();
  });
}

/**
 * A redeploy that storage refused (its RESTORED record on a full disk, a marker it could not read) is
 * tried again, as one more restart of the budget with its backoff; false when that is spent, or the
 * error is not the storage's.
 */
function redeployAgain(ops: JobOps, err: unknown): boolean {
  const { job, services } = ops;
  const r = job.restarting;
  if (!r || !isRedeploying(job.state) || !isStorageFailure(err)) return false;
  const tries = (r.tries ?? 0) + 1;
  const again = decideRedeployRetry(
    {
      restartsSpent: job.restartsSpent,
      maxRestarts: maxRestarts(job),
      restartsSinceCheckpoint: restartsSinceLastCheckpoint(job),
      backoff: restartBackoff(ops),
    },
    tries,
  );
  if (!again) return false;
  job.restartsSpent = again.restartsSpent;
  job.restarting = { ...r, tries, backoffMs: again.backoffMs };
  services.metrics.jobRestarts.inc();
  services.log.warn(
    { jobId: job.id, restartsSpent: job.restartsSpent, backoffMs: again.backoffMs },
    `job ${job.id} (${job.name}): the redeploy after ${r.cause} failed: ${(err as Error).message}; trying again in ${again.backoffMs} ms (restart ${job.restartsSpent} of ${maxRestarts(job)})`,
  );
  maybeRedeploy(ops);
  return true;
}

async function redeploy(ops: JobOps): Promise<void> {
  const { job, services } = ops;
  const { config } = services;
  const { cause, since, backoffMs = 0, span } = job.restarting!;
  // Exponential backoff between restarts: a job that fails again at once does not spin the cluster.
  if (backoffMs > 0) await services.slots.wait(backoffMs);
  if (!isRedeploying(job.state) || services.stopping()) return;
  // A checkpoint completing as the failure came: survivors may commit it, so the restore starts from it.
  await job.checkpointing.markerWritten()?.catch(() => undefined);
  const restore = await restorePoint(services.restores, services.log, job);
  if (restore && job.checkpoint.checkpointDir)
    await services.restores.recordRestore(job.checkpoint.checkpointDir, job.id, restore, config.epoch);
  const staged = job.rescaling;
  const plan = staged?.plan ?? job.plan;
  const subtasks = placementSubtasks(plan, config.slotSharing);
  // From the placement to the deploy nothing awaits (see submit).
  const placement = await services.slots.place(job.id, subtasks, config.restartCapacityTimeoutMs, {
    giveUp: () => !isRedeploying(job.state),
    registrationRestartsClock: true,
    detail: slotNeed(plan, config.slotSharing).detail,
  });
  if (!isRedeploying(job.state)) return;
  const restoredFrom = restore?.checkpointId ?? 0;
  leaveRedeploy(ops, restoredFrom);
  if (staged) applyRescale(ops, staged, since, restoredFrom);
  else job.restarts.push({ at: since, deployedAt: services.clock.now(), cause, restoredFrom, attempt: job.attempt });
  ops.deploy(placement, restore);
  span?.end({
    'clink.restart.outcome': 'redeployed',
    'clink.restart.restored_from': restoredFrom,
    'clink.job.attempt': job.attempt,
  });
  services.log.info(
    { jobId: job.id, attempt: job.attempt, restoredFrom },
    `job ${job.id} (${job.name}) redeployed as attempt ${job.attempt} from ${describeRestorePoint(job, restore)}`,
  );
}

/** Leaving for DEPLOYING: a new attempt, its checkpoints numbered above the restore point. */
function leaveRedeploy(ops: JobOps, restoredFrom: number): void {
  const { job } = ops;
  job.attempt++;
  job.restarting = undefined;
  ops.moveTo('DEPLOYING');
  job.checkpointing.resume(restoredFrom);
}

/** The job takes the staged plan: its spec, plan, regions and parallelism settings from here on. */
function applyRescale(ops: JobOps, staged: StagedRescale, since: number, restoredFrom: number): void {
  const { job, services } = ops;
  takePlan(job, staged);
  job.progress.clear();
  job.subtaskProgress.clear();
  // The earlier layout's subtasks (all drained) are not the new one's: none of them is deployed again.
  for (const t of job.subtasks) job.collectedBytes -= t.collected?.length ?? 0;
  job.subtasks = [];
  job.rescaling = undefined;
  job.rescales.push({
    requestedAt: staged.requestedAt,
    at: since,
    deployedAt: services.clock.now(),
    changes: staged.changes,
    restoredFrom,
    attempt: job.attempt,
    cause: staged.cause,
    mode: 'drain-and-replan',
  });
}
