/**
 * Recovery: what the coordinator does once the failure handler has decided. A restart drains the job's
 * surviving subtasks, waits its backoff, and deploys the whole job again from its restore point (its
 * newest completed checkpoint, else the one it was submitted with) on the workers with free slots; a
 * retry drains one failover region and deploys it again as the next attempt. A survivor that does not
 * drain within --restart-drain-timeout-ms fails the job, named.
 */
import { StorageError } from '../errors.js';
import type { Logger } from '../log/index.js';
import { NO_TRACING, type ClinkMetrics, type Tracer } from '../metrics/index.js';
import { slotNeed, subtaskKey } from '../plan/index.js';
import { makeMessage, type Message } from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import type { CheckpointCoordinator } from './checkpoint-coordinator.js';
import { hasCompletedCheckpoint, jobDir, resolveRestore, UnusableCheckpointsError, type CompletedMarker, type RestorePoint } from './checkpoint-storage.js';
import { judgeFallback } from './fallback.js';
import { DEFAULT_SELF_HEAL_RESTARTS, type CoordinatorConfig } from './config.js';
import { decideFailure, decideRedeployRetry, firstLine, restartsSinceCheckpoint, type Failure, type FailureDecision } from './failure-handler.js';
import { isRedeploying, transition } from './job-lifecycle.js';
import { takePlan, type JobState, type StagedRescale, type SubtaskState, type WorkerSession } from './job-state.js';
import { placementSubtasks, type PlacementPlan } from './placement.js';
import { recordRestore } from './deployer.js';
import type { SlotWaiter } from './slot-waiter.js';

/** How a log line names where a deploy resumes. */
export function describeRestorePoint(job: JobState, restore: CompletedMarker | undefined): string {
  if (!restore) return 'the beginning (submitted without a restore point; no checkpoint had completed)';
  if (restore === job.submittedRestore) return `checkpoint ${restore.checkpointId} of ${restore.stateDir} (the restore point it was submitted with; none of its own had completed)`;
  return `checkpoint ${restore.checkpointId}`;
}

/** What a restore of a job's own checkpoints reads of it. */
export type RestoringJob = Pick<JobState, 'id' | 'plan' | 'checkpoint'>;

export interface JobRecoveryDeps {
  config: CoordinatorConfig;
  clock: Clock;
  log: Logger;
  metrics: ClinkMetrics;
  /** clink.restart spans, the decision to the redeploy. @default NO_TRACING */
  tracer?: Tracer;
  checkpoints: CheckpointCoordinator;
  stopping: () => boolean;
  /** Slot waits and backoffs. */
  slots: SlotWaiter;
  post: (s: WorkerSession, m: Message) => void;
  postToJob: (job: JobState, m: Message) => void;
  failJob: (job: JobState, reason: string) => void;
  finishSubtask: (job: JobState, st: SubtaskState, error: string) => void;
  maybeComplete: (job: JobState) => void;
  deploy: (job: JobState, placement: PlacementPlan, restore: CompletedMarker | undefined) => void;
  /** Where checkpoints are read and restores recorded. @default the checkpoint directory on disk */
  restoreStore?: RestoreStore;
}

/** A job's checkpoints as a restart sees them. */
export interface RestoreStore {
  /** The newest usable checkpoint in a job's marker directory, or undefined when it has completed none (throws when every one is damaged). */
  newest(jobDir: string): Promise<RestorePoint | undefined>;
  /** Write `RESTORED` for a deploy that continues a run. */
  recordRestore(checkpointDir: string, jobId: string, restore: CompletedMarker, epoch: number): Promise<void>;
}

const diskRestoreStore: RestoreStore = {
  newest: async (dir) => ((await hasCompletedCheckpoint(dir)) ? resolveRestore(dir, 0) : undefined),
  recordRestore,
}

export class JobRecovery {
  private readonly store: RestoreStore;

  constructor(private readonly deps: JobRecoveryDeps) {
    this.store = deps.restoreStore ?? diskRestoreStore;
  }


  private get backoff(): { initialMs: number; maxMs: number } {
    return { initialMs: this.deps.config.restartBackoffInitialMs, maxMs: this.deps.config.restartBackoffMaxMs };
  }

  private restartsSinceCheckpoint(job: JobState): number {
    return restartsSinceCheckpoint(
      job.restarts.map((r) => r.at),
      job.checkpoints.at(-1)?.completedAtMs,
    );
  }

  /** The restarts a job may spend on worker losses: none without durable checkpoints. */
  maxRestarts(job: JobState): number {
    if (!job.checkpoint.checkpointDir) return 0;
    const n = job.checkpoint.maxRestartsOnWorkerLoss;
    return n >= 0 ? n : DEFAULT_SELF_HEAL_RESTARTS;
  }

  /** Heal a failure as decideFailure says (restart, retry a region, or fail); returns what it did. */
  handleFailure(job: JobState, failure: Failure, st?: SubtaskState): FailureDecision['action'] {
    const decision = decideFailure(
      {
        state: job.state,
        checkpointed: job.checkpoint.checkpointDir !== '',
        stopping: this.deps.stopping(),
        restartsSpent: job.restartsSpent,
        maxRestarts: this.maxRestarts(job),
        retriesSpent: (k) => job.retriesBySubtask.get(k) ?? 0,
        maxRetries: this.maxRetries(job),
        restartsSinceCheckpoint: this.restartsSinceCheckpoint(job),
        backoff: this.backoff,
      },
      failure,
    );
    if (decision.action === 'restart') this.beginRestart(job, decision);
    else if (decision.action === 'retry' && st) this.beginRetry(job, st, failure.error, decision);
    else if (decision.action === 'fail') this.deps.failJob(job, decision.reason);
    return decision.action;
  }

  /**
   * A worker was lost: cancel the job's surviving subtasks and, once they have drained, deploy the
   * whole job again from its last completed checkpoint on the workers with free slots.
   */
  private beginRestart(job: JobState, { cause, backoffMs, restartsSpent }: Extract<FailureDecision, { action: 'restart' }>): void {
    job.state = transition(job.state, 'RESTARTING', `job ${job.id}`);
    job.restartsSpent = restartsSpent;
    job.restarting = { cause, since: this.deps.clock.now(), span: (this.deps.tracer ?? NO_TRACING).start('clink.restart', { 'clink.job.id': job.id, 'clink.job.name': job.name, 'clink.restart.cause': cause, 'clink.restart.number': job.restartsSpent + 1 }) };
    this.deps.checkpoints.forget(job, cause);
    delete job.peerFailure;
    // A hot rescale under way is over: the restart deploys whichever plan the job had taken.
    delete job.cutover;
    this.deps.slots.capacityChanged(); // a retry of this job waiting for slots gives up
    this.deps.metrics.jobRestarts.inc();
    job.restarting.backoffMs = backoffMs;
    this.deps.log.warn(
      { jobId: job.id, attempt: job.attempt, restartsSpent: job.restartsSpent, maxRestarts: this.maxRestarts(job), backoffMs },
      `job ${job.id} (${job.name}) restarting after ${cause} (restart ${job.restartsSpent} of ${this.maxRestarts(job)}${backoffMs > 0 ? `, in ${backoffMs} ms` : ''})`,
    );
    this.deps.postToJob(job, makeMessage('CancelJob', { jobId: job.id, reason: `restarting after ${cause}` }));
    this.maybeRedeploy(job);
  }

  /**
   * A rescale's checkpoint completed: stop the job and, once it has drained, deploy it from that
   * checkpoint with the staged plan (no restart budget spent, no backoff).
   */
  beginRescale(job: JobState, staged: StagedRescale): void {
    job.state = transition(job.state, 'RESCALING', `job ${job.id}`);
    job.rescaling = staged;
    delete job.cutover;
    job.restarting = { cause: `rescale (${staged.changes.join(', ')})`, since: this.deps.clock.now(), span: (this.deps.tracer ?? NO_TRACING).start('clink.rescale', { 'clink.job.id': job.id, 'clink.job.name': job.name, 'clink.rescale.mode': 'drain_and_replan' }) };
    this.deps.checkpoints.forget(job, 'rescaling');
    delete job.peerFailure;
    this.deps.log.info({ jobId: job.id, checkpointId: staged.checkpointId }, `job ${job.id} (${job.name}) rescaling (${staged.changes.join(', ')}) from checkpoint ${staged.checkpointId}: draining`);
    this.deps.postToJob(job, makeMessage('CancelJob', { jobId: job.id, reason: `rescaling (${staged.changes.join(', ')})` }));
    this.maybeRedeploy(job);
  }

  /** A survivor that neither drains nor dies within restartDrainTimeoutMs fails the job, named. */
  checkDrain(job: JobState, now: number): void {
    const r = job.restarting;
    // Once every subtask has drained, the restart waits on its backoff and on slots, not on a drain.
    if (!r || now - r.since < this.deps.config.restartDrainTimeoutMs || job.subtasks.every((t) => t.finished)) return;
    this.failUndrained(job, `restart after ${r.cause}`, job.subtasks.filter((t) => !t.finished));
  }

  /** Fail the job naming each subtask that did not drain and its worker; those count as finished. */
  private failUndrained(job: JobState, what: string, stuck: SubtaskState[]): void {
    this.deps.failJob(job, `${what}: not drained within ${this.deps.config.restartDrainTimeoutMs} ms: ${stuck.map((t) => `${subtaskKey(t.taskId, t.index)} on worker ${t.session.id}`).join(', ')}`);
    for (const t of stuck) this.deps.finishSubtask(job, t, 'did not drain');
    this.deps.maybeComplete(job);
  }

  /** A retried region whose subtasks neither drain nor die within restartDrainTimeoutMs fails the job, named. */
  checkRetryDrain(job: JobState, now: number): void {
    for (const [region, r] of job.retrying) {
      if (r.deploying || now - r.at < this.deps.config.restartDrainTimeoutMs) continue;
      this.failUndrained(job, `retry of subtask ${r.subtask}`, job.subtasks.filter((t) => !t.finished && job.regionOf.get(subtaskKey(t.taskId, t.index)) === region));
      return;
    }
  }

  maybeRedeploy(job: JobState): void {
    if (!isRedeploying(job.state) || !job.subtasks.every((t) => t.finished)) return;
    this.redeploy(job).catch((err: unknown) => {
      if (this.redeployAgain(job, err)) return;
      job.restarting?.span?.end({ 'clink.restart.outcome': 'failed' }, (err as Error).message);
      const what = job.rescaling ? job.restarting?.cause ?? 'rescale' : `restart after ${job.restarting?.cause ?? 'a worker loss'}`;
      this.deps.failJob(job, `${what} failed: ${(err as Error).message}`);
      this.deps.maybeComplete(job);
    });
  }

  /**
   * A redeploy that storage refused (its RESTORED record on a full disk, a marker it could not read) is
   * tried again, as one more restart of the budget with its backoff; false when that is spent, or the
   * error is not the storage's.
   */
  private redeployAgain(job: JobState, err: unknown): boolean {
    const r = job.restarting;
    if (!r || !isRedeploying(job.state) || !isStorageFailure(err)) return false;
    const tries = (r.tries ?? 0) + 1;
    const again = decideRedeployRetry(
      { restartsSpent: job.restartsSpent, maxRestarts: this.maxRestarts(job), restartsSinceCheckpoint: this.restartsSinceCheckpoint(job), backoff: this.backoff },
      tries,
    );
    if (!again) return false;
    job.restartsSpent = again.restartsSpent;
    r.tries = tries;
    r.backoffMs = again.backoffMs;
    this.deps.metrics.jobRestarts.inc();
    this.deps.log.warn(
      { jobId: job.id, restartsSpent: job.restartsSpent, backoffMs: r.backoffMs },
      `job ${job.id} (${job.name}): the redeploy after ${r.cause} failed: ${(err as Error).message}; trying again in ${r.backoffMs} ms (restart ${job.restartsSpent} of ${this.maxRestarts(job)})`,
    );
    this.maybeRedeploy(job);
    return true;
  }

  private async redeploy(job: JobState): Promise<void> {
    const { cause, since, backoffMs = 0, span } = job.restarting!;
    // Exponential backoff between restarts: a job that fails again at once does not spin the cluster.
    if (backoffMs > 0) await this.deps.slots.wait(backoffMs);
    if (!isRedeploying(job.state) || this.deps.stopping()) return;
    // A checkpoint completing as the failure came: survivors may commit it, so the restore starts from it.
    await job.markerWrite?.catch(() => undefined);
    const restore = await this.restorePoint(job);
    if (restore && job.checkpoint.checkpointDir) await this.store.recordRestore(job.checkpoint.checkpointDir, job.id, restore, this.deps.config.epoch);
    const staged = job.rescaling;
    const plan = staged?.plan ?? job.plan;
    const subtasks = placementSubtasks(plan, this.deps.config.slotSharing);
    // From the placement to the deploy nothing awaits (see submit).
    const placement = await this.deps.slots.place(job.id, subtasks, this.deps.config.restartCapacityTimeoutMs, {
      giveUp: () => !isRedeploying(job.state),
      registrationRestartsClock: true,
      detail: slotNeed(plan, this.deps.config.slotSharing).detail,
    });
    if (!isRedeploying(job.state)) return;
    job.attempt++;
    job.restarting = undefined;
    job.state = transition(job.state, 'DEPLOYING', `job ${job.id}`);
    job.checkpointFloor = Math.max(job.checkpointFloor, restore?.checkpointId ?? 0);
    job.lastCheckpointAt = this.deps.clock.now();
    if (staged) this.applyRescale(job, staged, since, restore?.checkpointId ?? 0);
    else job.restarts.push({ at: since, deployedAt: this.deps.clock.now(), cause, restoredFrom: restore?.checkpointId ?? 0, attempt: job.attempt });
    this.deps.deploy(job, placement, restore);
    span?.end({ 'clink.restart.outcome': 'redeployed', 'clink.restart.restored_from': restore?.checkpointId ?? 0, 'clink.job.attempt': job.attempt });
    this.deps.log.info(
      { jobId: job.id, attempt: job.attempt, restoredFrom: restore?.checkpointId ?? 0 },
      `job ${job.id} (${job.name}) redeployed as attempt ${job.attempt} from ${describeRestorePoint(job, restore)}`,
    );
  }

  /** The job takes the staged plan: its spec, plan, regions and parallelism settings from here on. */
  private applyRescale(job: JobState, staged: StagedRescale, since: number, restoredFrom: number): void {
    takePlan(job, staged);
    job.progress.clear();
    job.subtaskProgress.clear();
    // The earlier layout's subtasks (all drained) are not the new one's: none of them is deployed again.
    for (const t of job.subtasks) job.collectedBytes -= t.collected?.length ?? 0;
    job.subtasks = [];
    job.rescaling = undefined;
    job.rescales.push({ requestedAt: staged.requestedAt, at: since, deployedAt: this.deps.clock.now(), changes: staged.changes, restoredFrom, attempt: job.attempt, cause: staged.cause, mode: 'drain-and-replan' });
  }

  /**
   * Where a restart or retry resumes: the job's newest completed checkpoint, else the restore point it
   * was submitted with, else (a job submitted fresh that never completed one) the beginning.
   */
  private async restorePoint(job: JobState): Promise<CompletedMarker | undefined> {
    if (!job.checkpoint.checkpointDir) return job.submittedRestore;
    return (await this.newestOwnRestore(job, job.submittedRestore !== undefined)) ?? job.submittedRestore;
  }

  /**
   * A job's newest usable checkpoint of its own; undefined when it has none, or (`hasSubmittedRestore`)
   * when every one is damaged and the restore point it was submitted with is the next older one. A
   * fallback past checkpoints its transactional sinks may have committed throws, unless the job allows
   * duplicates on fallback; one that goes ahead is logged, naming the sinks that write again.
   */
  async newestOwnRestore(job: RestoringJob, hasSubmittedRestore: boolean): Promise<CompletedMarker | undefined> {
    const judge = (point: Pick<RestorePoint, 'skipped' | 'committedThrough'>, restored: number, to: string): void => {
      const line = judgeFallback({ what: `job ${job.id}`, to, restored, point, plan: job.plan, allowed: job.checkpoint.allowDuplicatesOnFallback });
      if (line) this.deps.log.warn({ jobId: job.id, restoredFrom: restored }, line);
    };
    let point: RestorePoint | undefined;
    try {
      point = await this.store.newest(jobDir(job.checkpoint.checkpointDir, job.id));
    } catch (err) {
      if (!(err instanceof UnusableCheckpointsError) || !hasSubmittedRestore) throw err;
      judge(err, 0, 'the restore point it was submitted with');
      return undefined;
    }
    if (point) judge(point, point.marker.checkpointId, `checkpoint ${point.marker.checkpointId}`);
    return point?.marker;
  }

  // ---------------------------------------------------------------- retries (jobs without checkpoints)

  /** Retries each subtask of a job without checkpoints may spend: the job's own setting, else the coordinator's. */
  maxRetries(job: JobState): number {
    return job.checkpoint.maxRestarts >= 0 ? job.checkpoint.maxRestarts : this.deps.config.maxRegionRetries;
  }

  /**
   * A subtask of a job without checkpoints failed: stop the rest of its failover region (the subtasks it
   * shares channels with, directly or not) and, once they have drained, run the region again from the
   * beginning. Its sources re-read their input from the start and its state starts empty, so each record
   * reaches the region's sinks at least once; the job's other regions run on untouched.
   */
  private beginRetry(job: JobState, st: SubtaskState, cause: string, { retry, backoffMs }: Extract<FailureDecision, { action: 'retry' }>): void {
    const key = subtaskKey(st.taskId, st.index);
    const region = job.regionOf.get(key)!;
    const size = job.regions[region]!.length;
    job.retriesBySubtask.set(key, retry);
    job.retrying.set(region, { at: this.deps.clock.now(), subtask: key, workerId: st.session.id, cause, retry, subtasks: size, backoffMs });
    if (job.peerFailure && job.regionOf.get(job.peerFailure.subtask) === region) delete job.peerFailure;
    this.deps.metrics.subtaskRetries.inc();
    this.deps.log.warn(
      { jobId: job.id, subtask: key, workerId: st.session.id, retry, maxRegionRetries: this.maxRetries(job), regionSubtasks: size },
      `job ${job.id} (${job.name}): subtask ${key} failed on worker ${st.session.id}; retrying it with its failover region of ${size} subtasks from ${job.submittedRestore ? `checkpoint ${job.submittedRestore.checkpointId}` : 'the beginning'} (retry ${retry} of ${this.maxRetries(job)}): ${firstLine(cause)}`,
    );
    const bySession = new Map<WorkerSession, string[]>();
    for (const t of job.subtasks) {
      const k = subtaskKey(t.taskId, t.index);
      if (t.finished || job.regionOf.get(k) !== region) continue;
      (bySession.get(t.session) ?? bySession.set(t.session, []).get(t.session)!).push(k);
    }
    for (const [s, subtasks] of bySession) this.deps.post(s, makeMessage('CancelJob', { jobId: job.id, reason: `retrying after subtask ${key} failed`, subtasks }));
    this.maybeRetryRegion(job, region);
  }

  /** Once every subtask of a retried region has drained, deploy the region again as the next attempt. */
  maybeRetryRegion(job: JobState, region: number): void {
    const r = job.retrying.get(region);
    const inRegion = (t: { taskId: string; index: number }): boolean => job.regionOf.get(subtaskKey(t.taskId, t.index)) === region;
    if (!r || r.deploying || job.subtasks.some((t) => !t.finished && inRegion(t))) return;
    r.deploying = true;
    const subtasks = placementSubtasks(job.plan, this.deps.config.slotSharing, inRegion);
    const current = (): boolean => job.state === 'RUNNING' && job.retrying.get(region) === r;
    this.deps.slots
      .wait(r.backoffMs)
      .then(() => this.deps.slots.place(job.id, subtasks, this.deps.config.restartCapacityTimeoutMs, { giveUp: () => !current(), registrationRestartsClock: true }))
      .then((placement) => {
        if (!current()) return;
        job.attempt++;
        job.retrying.delete(region);
        const { deploying: _, backoffMs: _backoff, ...retry } = r;
        job.retries.push({ ...retry, deployedAt: this.deps.clock.now(), attempt: job.attempt });
        // A job without checkpoints of its own resumes its region from the restore point it was submitted with.
        this.deps.deploy(job, placement, job.submittedRestore);
        this.deps.log.info(
          { jobId: job.id, attempt: job.attempt, subtask: r.subtask },
          `job ${job.id} (${job.name}): failover region of subtask ${r.subtask} (${subtasks.length} subtasks) redeployed as attempt ${job.attempt} from ${describeRestorePoint(job, job.submittedRestore)}`,
        );
      })
      .catch((err: unknown) => {
        this.deps.failJob(job, `retry of subtask ${r.subtask} after ${firstLine(r.cause)} failed: ${(err as Error).message}`);
        this.deps.maybeComplete(job);
      });
  }
}

/** A failure of the storage (a full disk, an I/O error) rather than of what was asked of it: it may pass. */
function isStorageFailure(err: unknown): boolean {
  if (err instanceof StorageError) return true;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EIO' || code === 'EAGAIN' || code === 'EBUSY' || code === 'EMFILE' || code === 'ENFILE';
}
