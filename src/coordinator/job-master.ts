/**
 * The JobMaster: one per running job. It owns the job's state, handles the frames its workers send
 * about it (ports, finishes, checkpoint acks, final-checkpoint requests), hands failures to the failure
 * handler (through JobRecovery), and decides when the job has ended. Every change of the job's state
 * goes through the lifecycle table (job-lifecycle.ts).
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { subtaskKey } from '../plan/index.js';
import { decodeCollected, encodeCollected, makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import type { CheckpointCoordinator } from './checkpoint-coordinator.js';
import { jobDir } from './checkpoint-storage.js';
import { MAX_JOB_COLLECTED_BYTES } from './config.js';
import type { Deployer } from './deployer.js';
import { firstLine, type Failure, type FailureDecision } from './failure-handler.js';
import { isRedeploying, isTerminal, transition } from './job-lifecycle.js';
import type { JobRecovery } from './job-recovery.js';
import { releaseSlot, type JobState, type SubtaskState, type WorkerSession } from './job-state.js';

/** The frames a worker sends about one job. */
export type JobFrame = MessageOf<'SubtaskListening' | 'SubtaskFinished' | 'SubtaskCheckpointed' | 'CheckpointCommitted' | 'RequestFinalCheckpoint'>;

export interface JobMasterDeps {
  clock: Clock;
  log: Logger;
  metrics: ClinkMetrics;
  /** How long a subtask failure blamed on a lost peer waits for the verdict on that peer. */
  peerVerdictMs: number;
  recovery: JobRecovery;
  checkpoints: CheckpointCoordinator;
  deployer: Deployer;
  post: (s: WorkerSession, m: Message) => void;
  /** A slot came free or a job failed: placements waiting for slots look again. */
  capacityChanged: () => void;
  /** The job has ended (every subtask finished, its state terminal). */
  ended: (master: JobMaster) => void;
}

/** Post `m` once to each live session that runs an unfinished subtask of `job`. */
export function postToJob(job: JobState, m: Message, post: (s: WorkerSession, m: Message) => void): void {
  for (const s of new Set(job.subtasks.filter((t) => !t.finished && t.session.state === 'active').map((t) => t.session))) post(s, m);
}

export class JobMaster {
  constructor(
    readonly job: JobState,
    private readonly deps: JobMasterDeps,
  ) {}

  /** A frame about this job from worker session `s`. */
  onFrame(s: WorkerSession, m: JobFrame): void {
    switch (m.type) {
      case 'SubtaskListening':
        return this.onListening(s, m);
      case 'SubtaskFinished':
        return this.onFinished(s, m);
      case 'SubtaskCheckpointed':
        return this.deps.checkpoints.onAck(this.job, m);
      case 'CheckpointCommitted':
        return this.deps.checkpoints.onCommitted(this.job, m);
      case 'RequestFinalCheckpoint':
        if (this.subtaskOf(m.taskId, m.subtaskIndex, s)) this.deps.checkpoints.onFinalRequested(this.job, m.taskId, m.subtaskIndex);
    }
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
    if (!group.every((t) => t.listening)) return;
    const workers = this.deps.deployer.connect(job, group, st.attempt);
    // A hot rescale's new subtasks (a deploy of a job that runs); a restart's are the job's, below.
    if (job.cutover && job.state === 'RUNNING') {
      job.cutover.connected?.();
      return;
    }
    if (job.state === 'RUNNING') {
      this.deps.log.info({ jobId: job.id, attempt: st.attempt }, `job ${job.id} (${job.name}): ${group.length} retried subtasks running again as attempt ${st.attempt}`);
      return;
    }
    job.state = transition(job.state, 'RUNNING', `job ${job.id}`);
    job.runningAt = this.deps.clock.now();
    const rescale = job.rescales.at(-1);
    if (rescale && rescale.attempt === job.attempt && rescale.runningAt === undefined) rescale.runningAt = job.runningAt;
    this.deps.log.info({ jobId: job.id }, `job ${job.id} (${job.name}) running: ${job.subtasks.length} subtasks on ${workers} workers`);
  }

  private onFinished(s: WorkerSession, m: MessageOf<'SubtaskFinished'>): void {
    const job = this.job;
    const st = this.subtaskOf(m.taskId, m.subtaskIndex, s);
    if (!st || st.finished) return;
    this.finishSubtask(st, m.ok ? undefined : m.error || 'failed');
    // Ended cleanly: it committed everything it prepared.
    if (m.ok) this.deps.checkpoints.onSubtaskEnded(job, subtaskKey(st.taskId, st.index));
    if (isRedeploying(job.state)) {
      // A survivor drained: what it did belongs to the abandoned attempt.
      this.deps.recovery.maybeRedeploy(job);
      return;
    }
    // Replaced by a hot rescale, as asked: its state is in the cutover checkpoint.
    if (st.retiring && m.ok) return;
    const key = subtaskKey(st.taskId, st.index);
    const region = job.regionOf.get(key)!;
    if (job.retrying.has(region)) {
      // Its region is being retried: what it did belongs to the abandoned attempt.
      this.deps.recovery.maybeRetryRegion(job, region);
      return;
    }
    st.recordsIn = m.recordsIn;
    st.recordsOut = m.recordsOut;
    if (m.collected.length > 0) this.addCollected(st, m.collected);
    if (!m.ok && m.peerLost) {
      // A consequence of another worker's loss or of a failure in its region, most likely: wait for the cause.
      job.peerFailure ??= { error: m.error, at: this.deps.clock.now(), subtask: key };
    } else if (!m.ok && job.state !== 'CANCELED') {
      // A failure that is not deterministic (fatal: the deploy itself failed) heals like a worker loss:
      // from the last checkpoint, or by retrying the subtask's region in a job without one.
      const error = m.error || `subtask ${key} failed`;
      this.handleFailure({ error, subtask: key, restartCause: `subtask ${key} failed on worker ${s.id}: ${firstLine(error)}`, fatal: m.fatal }, st);
    }
    this.maybeComplete();
  }

  /** Worker session `s` is gone: its unfinished subtasks of this job fail with `error`, and the job heals or fails. */
  onSessionGone(s: WorkerSession, error: string): void {
    const mine = this.job.subtasks.filter((t) => t.session === s && !t.finished);
    if (mine.length === 0) return;
    for (const st of mine) this.finishSubtask(st, error);
    // Lost while draining for a restart: those subtasks are gone either way; the restart goes on.
    if (isRedeploying(this.job.state)) this.deps.recovery.maybeRedeploy(this.job);
    else if (this.handleFailure({ error }) === 'fail') this.maybeComplete();
  }

  /** The watchdog's sweep: drains that overran, and a peer failure whose cause never showed. */
  tick(now: number): void {
    const job = this.job;
    if (isRedeploying(job.state)) this.deps.recovery.checkDrain(job, now);
    else if (job.retrying.size > 0) this.deps.recovery.checkRetryDrain(job, now);
    if (job.peerFailure && job.state === 'RUNNING' && now - job.peerFailure.at > this.deps.peerVerdictMs) {
      // A peer connection broke and no worker was declared lost: heal it the same way.
      const { error, subtask } = job.peerFailure;
      const st = job.subtasks.find((t) => subtaskKey(t.taskId, t.index) === subtask);
      this.handleFailure({ error, ...(st ? { subtask } : {}) }, st);
      this.maybeComplete();
    }
  }

  /** Heal a failure as the failure handler decides (restart, retry a region, or fail); returns what it did. */
  private handleFailure(failure: Failure, st?: SubtaskState): FailureDecision['action'] {
    return this.deps.recovery.handleFailure(this.job, failure, st);
  }

  /** A failure of the job that no frame reported (its final checkpoint): healed as any other, or the job fails. */
  heal(failure: Failure): void {
    if (isTerminal(this.job.state) || isRedeploying(this.job.state)) return;
    this.handleFailure(failure);
    this.maybeComplete();
  }

  post(m: Message): void {
    postToJob(this.job, m, this.deps.post);
  }

  finishSubtask(st: SubtaskState, error: string | undefined): void {
    st.finished = true;
    this.job.subtaskProgress.delete(subtaskKey(st.taskId, st.index));
    if (error) st.error = error;
    releaseSlot(st.session, `${this.job.id}/${st.slot}`);
    this.deps.capacityChanged();
  }

  /** The job fails (or is cancelled): every subtask still running is told to stop. */
  fail(error: string, state: 'FAILED' | 'CANCELED' = 'FAILED'): void {
    const job = this.job;
    if (isTerminal(job.state)) return;
    job.state = transition(job.state, state, `job ${job.id}`);
    job.error = error;
    job.retrying.clear();
    const cancel = (): void => this.post(makeMessage('CancelJob', { jobId: job.id, reason: error }));
    // A checkpoint completing as a client cancels: its CommitCheckpoint goes first, so its sinks make it visible before they stop.
    if (state === 'CANCELED' && job.markerWrite) void job.markerWrite.finally(cancel);
    else cancel();
    this.deps.log.warn({ jobId: job.id, state }, `job ${job.id} (${job.name}) ${state === 'CANCELED' ? 'cancelled' : 'failed'}: ${error}`);
    // A restart or retry of this job waiting for slots gives up now.
    this.deps.capacityChanged();
  }

  /** Cancel the job: its subtasks stop; it ends CANCELED once they have. */
  cancel(reason: string): void {
    this.fail(reason, 'CANCELED');
    this.maybeComplete();
  }

  /** The job ends once every subtask has finished and nothing (a restart, a retry, a final checkpoint) is still to come. */
  maybeComplete(): void {
    const job = this.job;
    if (job.finishedAt !== undefined || isRedeploying(job.state) || job.retrying.size > 0 || !job.subtasks.every((t) => t.finished)) return;
    // A subtask may finish before its ack of the final checkpoint arrives: the job ends with its marker.
    if (job.state === 'RUNNING' && (job.pendingCheckpoint?.final || (job.startingCheckpoint && this.deps.checkpoints.finalWanted(job)))) return;
    // A checkpoint whose acks were all in is still writing its marker (and pruning older ones): a client
    // told the job ended would restore from the checkpoint before it, whose state retention is deleting.
    if (job.markerWrite) {
      void job.markerWrite.finally(() => this.maybeComplete());
      return;
    }
    if (job.state === 'DEPLOYING' || job.state === 'RUNNING') job.state = transition(job.state, 'FINISHED', `job ${job.id}`);
    job.finishedAt = this.deps.clock.now();
    this.deps.metrics.jobsEnded.inc({ state: job.state });
    this.deps.log.info({ jobId: job.id, state: job.state }, `job ${job.id} (${job.name}) ${job.state.toLowerCase()} in ${job.finishedAt - job.startedAt} ms`);
    const owed = job.commits.owedCheckpoints;
    if (owed.length > 0 && job.checkpoint.checkpointDir) {
      // Prepared, durable, perhaps not visible: only a restore of this job's checkpoints commits it.
      this.deps.log.warn(
        { jobId: job.id, owed },
        `job ${job.id} (${job.name}) ended with the commits of checkpoint ${owed.join(', ')} not confirmed by its sinks: what they prepared is durable but may not be visible; submit it again with --restore-from-dir ${jobDir(job.checkpoint.checkpointDir, job.id)} to finish them`,
      );
    }
    this.deps.ended(this);
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
      durationMs: (job.finishedAt ?? this.deps.clock.now()) - job.startedAt,
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
