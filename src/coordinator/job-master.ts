/**
 * The JobMaster: one per job, the only writer of its record (JobState) together with the state files in
 * job-states/. It handles the frames its workers send about it (ports, finishes, checkpoint acks,
 * final-checkpoint requests), decides failures with the failure handler and hands them to the state
 * they lead to, and is the one place the job's state changes (moveTo, through the lifecycle table).
 * Its checkpoint coordinator (one per job) owns the job's checkpoints.
 */
import { subtaskKey } from '../plan/index.js';
import {
  CONVERT_CHECKPOINT_PROTOCOL_VERSION,
  decodeCollected,
  encodeCollected,
  makeMessage,
  type Message,
  type MessageOf,
  type SubtaskProgressReport,
} from '../protocol/index.js';
import { CheckpointCoordinator } from './checkpoint-coordinator.js';
import type { CompletedMarker } from './checkpoint-storage.js';
import { MAX_JOB_COLLECTED_BYTES } from './config.js';
import { countChannels } from './job-views.js';
import {
  decideFailure,
  firstLine,
  restartsSpentAfterCheckpoint,
  type Failure,
  type FailureDecision,
} from './failure-handler.js';
import { isRedeploying, isTerminal, transition, type JobStateName } from './job-lifecycle.js';
import {
  releaseSlot,
  takePlan,
  type JobCutover,
  type JobRescale,
  type JobState,
  type NewJob,
  type StagedRescale,
  type SubtaskState,
  type WorkerSession,
} from './job-state.js';
import type { PlacementPlan } from './placement.js';
import { nextSample } from './task-metrics.js';
import { enterFailed, maybeEnd } from './job-states/ended.js';
import type { JobOps, JobServices } from './job-states/job-ops.js';
import {
  beginRescale,
  beginRestart,
  checkDrain,
  maxRestarts,
  maybeRedeploy,
  restartBackoff,
  restartsSinceLastCheckpoint,
} from './job-states/redeploying.js';
import { beginRetry, checkRetryDrain, maxRetries, maybeRetryRegion } from './job-states/retrying.js';
import { groupListening } from './job-states/running.js';

export type { JobServices } from './job-states/job-ops.js';

/** The frames a worker sends about one job. */
export type JobFrame = MessageOf<
  'SubtaskListening' | 'SubtaskFinished' | 'SubtaskCheckpointed' | 'CheckpointCommitted' | 'RequestFinalCheckpoint'
>;

/** Post `m` once to each live session that runs an unfinished subtask of `job`. */
export function postToJob(
  job: Pick<JobState, 'subtasks'>,
  m: Message,
  post: (s: WorkerSession, m: Message) => void,
): void {
  for (const s of new Set(
    job.subtasks.filter((t) => !t.finished && t.session.state === 'active').map((t) => t.session),
  ))
    post(s, m);
}

export class JobMaster implements JobOps {
  readonly job: JobState;

  constructor(
    job: NewJob,
    readonly services: JobServices,
    /** The checkpoint the job starts from (0: none): its checkpoint ids number above it. */
    restoredFrom = 0,
  ) {
    const checkpointing = new CheckpointCoordinator(
      job,
      {
        post: (m) => this.post(m),
        failed: (error, fatal) => this.heal({ error, fatal }),
        maybeComplete: () => this.maybeComplete(),
        cancel: (reason) => this.cancel(reason),
        completed: (at) => this.checkpointCompleted(at),
        convertsInPlace: () =>
          this.job.subtasks.every((t) => t.session.protocolVersion >= CONVERT_CHECKPOINT_PROTOCOL_VERSION),
      },
      services.checkpoints,
      restoredFrom,
    );
    this.job = Object.assign(job, { checkpointing });
  }

  moveTo(to: JobStateName): void {
    this.job.state = transition(this.job.state, to, `job ${this.job.id}`);
  }

  /** A frame about this job from worker session `s`. */
  onFrame(s: WorkerSession, m: JobFrame): void {
    const checkpointing = this.job.checkpointing;
    switch (m.type) {
      case 'SubtaskListening':
        return this.onListening(s, m);
      case 'SubtaskFinished':
        return this.onFinished(s, m);
      case 'SubtaskCheckpointed':
        return checkpointing.onAck(m);
      case 'CheckpointCommitted':
        return checkpointing.commits.confirmed(m);
      case 'RequestFinalCheckpoint':
        if (this.subtaskOf(m.taskId, m.subtaskIndex, s)) checkpointing.onFinalRequested(m.taskId, m.subtaskIndex);
    }
  }

  /** A heartbeat's report for this job: worker `workerId`'s totals, or one running subtask's counts. */
  onProgress(
    workerId: string,
    totals: { sourceRecords: number; sinkRecords: number } | undefined,
    report: SubtaskProgressReport | undefined,
    now: number,
  ): void {
    if (totals)
      this.job.progress.set(workerId, { sourceRecords: totals.sourceRecords, sinkRecords: totals.sinkRecords });
    if (!report) return;
    const key = subtaskKey(report.taskId, report.subtaskIndex);
    const next = nextSample(this.job.subtaskProgress.get(key), report, now);
    if (next) this.job.subtaskProgress.set(key, next);
  }

  private subtaskOf(taskId: string, index: number, s: WorkerSession): SubtaskState | undefined {
    return this.job.subtasks.find((t) => t.taskId === taskId && t.index === index && t.session === s);
  }

  private onListening(s: WorkerSession, m: MessageOf<'SubtaskListening'>): void {
    const job = this.job;
    const st = this.subtaskOf(m.taskId, m.subtaskIndex, s);
    if (!st || st.started || (job.state !== 'DEPLOYING' && job.state !== 'RUNNING')) return;
    st.listening = m.edgePorts;
    st.dataLinks = m.dataLinks;
    // Every subtask of one deploy (the whole job, a retried region, a hot rescale's new subtasks) starts together.
    const group = job.subtasks.filter((t) => t.attempt === st.attempt && !t.started);
    if (group.every((t) => t.listening)) groupListening(this, group, st.attempt);
  }

  private onFinished(s: WorkerSession, m: MessageOf<'SubtaskFinished'>): void {
    const job = this.job;
    const st = this.subtaskOf(m.taskId, m.subtaskIndex, s);
    if (!st || st.finished) return;
    this.finishSubtask(st, m.ok ? undefined : m.error || 'failed');
    const key = subtaskKey(st.taskId, st.index);
    // Ended cleanly: it committed everything it prepared.
    if (m.ok) job.checkpointing.commits.ended(key);
    // A survivor drained: what it did belongs to the abandoned attempt.
    if (isRedeploying(job.state)) return maybeRedeploy(this);
    // Replaced by a hot rescale, as asked: its state is in the cutover checkpoint.
    if (st.retiring && m.ok) return;
    const region = job.regionOf.get(key)!;
    // Its region is being retried: what it did belongs to the abandoned attempt.
    if (job.retrying.has(region)) return maybeRetryRegion(this, region);
    st.recordsIn = m.recordsIn;
    st.recordsOut = m.recordsOut;
    if (m.collected.length > 0) this.addCollected(st, m.collected);
    if (!m.ok && m.peerLost) {
      // A consequence of another worker's loss or of a failure in its region, most likely: wait for the cause.
      job.peerFailure ??= { error: m.error, at: this.services.clock.now(), subtask: key };
    } else if (!m.ok && job.state !== 'CANCELED') {
      // A failure that is not deterministic (fatal: the deploy itself failed) heals like a worker loss:
      // from the last checkpoint, or by retrying the subtask's region in a job without one.
      const error = m.error || `subtask ${key} failed`;
      this.handleFailure(
        {
          error,
          subtask: key,
          restartCause: `subtask ${key} failed on worker ${s.id}: ${firstLine(error)}`,
          fatal: m.fatal,
        },
        st,
      );
    }
    this.maybeComplete();
  }

  /** Worker session `s` is gone: its unfinished subtasks of this job fail with `error`, and the job heals or fails. */
  onSessionGone(s: WorkerSession, error: string): void {
    const mine = this.job.subtasks.filter((t) => t.session === s && !t.finished);
    if (mine.length === 0) return;
    for (const st of mine) this.finishSubtask(st, error);
    // Lost while draining for a restart: those subtasks are gone either way; the restart goes on.
    if (isRedeploying(this.job.state)) maybeRedeploy(this);
    else if (this.handleFailure({ error }) === 'fail') this.maybeComplete();
  }

  /** The watchdog's sweep: checkpoints due or overdue, drains that overran, a peer failure whose cause never showed. */
  tick(now: number): void {
    const job = this.job;
    if (isRedeploying(job.state)) checkDrain(this, now);
    else if (job.retrying.size > 0) checkRetryDrain(this, now);
    const { heartbeatTimeoutMs, watchdogIntervalMs } = this.services.config;
    if (
      job.peerFailure &&
      job.state === 'RUNNING' &&
      now - job.peerFailure.at > heartbeatTimeoutMs + watchdogIntervalMs
    ) {
      // A peer connection broke and no worker was declared lost: heal it the same way.
      const { error, subtask } = job.peerFailure;
      const st = job.subtasks.find((t) => subtaskKey(t.taskId, t.index) === subtask);
      this.handleFailure({ error, ...(st ? { subtask } : {}) }, st);
      this.maybeComplete();
    }
    job.checkpointing.tick();
  }

  /** Heal a failure as decideFailure says (restart, retry a region, or fail); returns what it did. */
  private handleFailure(failure: Failure, st?: SubtaskState): FailureDecision['action'] {
    const job = this.job;
    const decision = decideFailure(
      {
        state: job.state,
        checkpointed: job.checkpoint.checkpointDir !== '',
        stopping: this.services.stopping(),
        restartsSpent: job.restartsSpent,
        maxRestarts: maxRestarts(job),
        retriesSpent: (k) => job.retriesBySubtask.get(k) ?? 0,
        maxRetries: maxRetries(job, this.services.config.maxRegionRetries),
        restartsSinceCheckpoint: restartsSinceLastCheckpoint(job),
        backoff: restartBackoff(this),
      },
      failure,
    );
    if (decision.action === 'restart') beginRestart(this, decision);
    else if (decision.action === 'retry' && st) beginRetry(this, st, failure.error, decision);
    else if (decision.action === 'fail') this.fail(decision.reason);
    return decision.action;
  }

  /** A failure of the job that no frame reported (its final checkpoint): healed as any other, or the job fails. */
  heal(failure: Failure): void {
    if (isTerminal(this.job.state) || isRedeploying(this.job.state)) return;
    this.handleFailure(failure);
    this.maybeComplete();
  }

  /** A checkpoint completed at `at`: one long enough after the last restart forgives the restarts spent. */
  private checkpointCompleted(at: number): void {
    const job = this.job;
    job.restartsSpent = restartsSpentAfterCheckpoint(
      job.restartsSpent,
      job.restarts.at(-1)?.deployedAt,
      at,
      this.services.config.restartBudgetResetAfterMs,
    );
  }

  post(m: Message): void {
    postToJob(this.job, m, this.services.post);
  }

  /** Charge `placement`'s slots, record its subtasks (replacing an earlier attempt's of the same keys) and deploy them. */
  deploy(placement: PlacementPlan, restore: CompletedMarker | undefined): void {
    const job = this.job;
    const placed = this.services.deployer.charge(job, placement);
    const keys = new Set(placed.map((t) => subtaskKey(t.taskId, t.index)));
    const kept = job.subtasks.filter((t) => !keys.has(subtaskKey(t.taskId, t.index)));
    for (const t of job.subtasks) if (!kept.includes(t)) job.collectedBytes -= t.collected?.length ?? 0;
    const order = new Map(job.plan.subtasks.map((s, i) => [subtaskKey(s.taskId, s.index), i]));
    job.subtasks = [...kept, ...placed].sort(
      (a, b) => order.get(subtaskKey(a.taskId, a.index))! - order.get(subtaskKey(b.taskId, b.index))!,
    );
    const byWorker = new Map<string, SubtaskState[]>();
    for (const t of job.subtasks)
      (byWorker.get(t.session.id) ?? byWorker.set(t.session.id, []).get(t.session.id)!).push(t);
    job.edges = countChannels(job.plan, byWorker);
    this.services.deployer.send(job, placement, restore);
  }

  /** Drain and replan from a rescale's checkpoint (RESCALING). */
  rescale(staged: StagedRescale): void {
    beginRescale(this, staged);
  }

  /** A hot rescale begins: periodic checkpoints and savepoints wait until it ends. */
  beginCutover(rescaleId: number): JobCutover {
    return (this.job.cutover = { rescaleId });
  }

  endCutover(cutover: JobCutover): void {
    if (this.job.cutover === cutover) this.job.cutover = undefined;
  }

  /** A hot rescale's retired subtasks leave the job, which takes the new plan; `rewire` then updates the survivors' ports. */
  adoptCutover(staged: Omit<StagedRescale, 'checkpointId'>, retired: readonly SubtaskState[]): void {
    takePlan(this.job, staged);
    this.job.subtasks = this.job.subtasks.filter((t) => !retired.includes(t));
  }

  recordRescale(r: JobRescale): void {
    this.job.rescales.push(r);
  }

  /** Its client went away: nobody is told when it ends. */
  forgetClient(): void {
    delete this.job.client;
  }

  finishSubtask(st: SubtaskState, error: string | undefined): void {
    st.finished = true;
    this.job.subtaskProgress.delete(subtaskKey(st.taskId, st.index));
    if (error) st.error = error;
    releaseSlot(st.session, `${this.job.id}/${st.slot}`);
    this.services.capacityChanged();
  }

  /** The job fails (or is cancelled): every subtask still running is told to stop. */
  fail(error: string, state: 'FAILED' | 'CANCELED' = 'FAILED'): void {
    enterFailed(this, error, state);
  }

  /** Cancel the job: its subtasks stop; it ends CANCELED once they have. */
  cancel(reason: string): void {
    this.fail(reason, 'CANCELED');
    this.maybeComplete();
  }

  /** The job ends once every subtask has finished and nothing (a restart, a retry, a final checkpoint) is still to come. */
  maybeComplete(): void {
    maybeEnd(this, () => this.services.ended(this.job, this.completion()));
  }

  /** What the waiting client is told once the job has ended. */
  completion(): MessageOf<'JobCompleted'> {
    const job = this.job;
    const collected = this.collected();
    return makeMessage('JobCompleted', {
      jobId: job.id,
      ok: job.state === 'FINISHED',
      error: job.error ?? '',
      state: job.state,
      durationMs: (job.finishedAt ?? this.services.clock.now()) - job.startedAt,
      collected: Object.keys(collected).length > 0 ? encodeCollected(collected) : new Uint8Array(0),
    });
  }

  /** A subtask's collect() results are kept apart until the job completes, since a retry may replace them. */
  private addCollected(st: SubtaskState, bytes: Uint8Array): void {
    this.job.collectedBytes += bytes.length;
    if (this.job.collectedBytes > MAX_JOB_COLLECTED_BYTES) {
      this.fail(`collect() results exceed ${MAX_JOB_COLLECTED_BYTES} bytes; write large results to a sink`);
      return;
    }
    st.collected = bytes;
  }

  /** Every subtask's collect() results, merged in plan order. */
  private collected(): Record<string, unknown[]> {
    const out: Record<string, unknown[]> = {};
    for (const st of this.job.subtasks) {
      if (!st.collected) continue;
      for (const [name, values] of Object.entries(decodeCollected(st.collected))) {
        const arr = (out[name] ??= []);
        for (const v of values) arr.push(v);
      }
    }
    return out;
  }
}
