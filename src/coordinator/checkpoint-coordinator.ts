/**
 * The checkpoint coordinator: for every job with a checkpoint directory it triggers periodic
 * checkpoints, collects each subtask's ack, writes the COMPLETED marker once all are in, tells the
 * workers to commit (or abort), takes savepoints on request and the final checkpoint once every source
 * has ended. A checkpoint not complete within max(10 s, 10 intervals) is aborted.
 *
 * Everything it reaches outside the job's state is injected (the clock, the posts to workers, the
 * storage of ids and markers, what the job does on a failure), so its decisions are unit-tested
 * in-process on a fake clock; the coordinator wires the real ones.
 */
import { resolve as resolvePath } from 'node:path';
import type { Logger } from '../log/index.js';
import type { Clock } from '../util/index.js';
import { NO_TRACING, type CheckpointFailureReason, type ClinkMetrics, type Tracer } from '../metrics/index.js';
import { subtaskKey } from '../plan/index.js';
import { makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import { checkpointStateDir, jobStateDir } from '../state/index.js';
import { jobDir, type CompletedMarker } from './checkpoint-storage.js';
import type { JobState, SubtaskState } from './job-state.js';
import type { CommitRecord } from './commit-ledger.js';
import { identityOf } from './restore-gate.js';
import { restartsSpentAfterCheckpoint } from './failure-handler.js';

type SavepointResult = { ok: boolean; message: string; path: string };
type Pending = NonNullable<JobState['pendingCheckpoint']>;

/**
 * What checkpointing reads and keeps of a job: a coordinator's JobState, or a mesh run's leader's
 * record of its one job (mesh/leader.ts), which has no sessions, restarts in place or rescales.
 */
export type CheckpointedJob = Pick<
  JobState,
  | 'id'
  | 'name'
  | 'plan'
  | 'state'
  | 'checkpoint'
  | 'cutover'
  | 'pendingCheckpoint'
  | 'startingCheckpoint'
  | 'markerWrite'
  | 'finalRequests'
  | 'finalCheckpointId'
  | 'lastCheckpointAt'
  | 'checkpointFloor'
  | 'checkpoints'
  | 'checkpointsCompleted'
  | 'restarts'
  | 'restartsSpent'
  | 'commits'
  | 'commitWrite'
  | 'lastCheckpointFailure'
> & { subtasks: Pick<SubtaskState, 'taskId' | 'index' | 'finished'>[] };

/** Checkpoint storage: ids claimed on a record, markers, retention, removal of aborted state, confirmed commits. */
export interface CheckpointStorage {
  claimId(dir: string, floor: number): Promise<number>;
  writeMarker(dir: string, marker: CompletedMarker): Promise<void>;
  retain(markerDir: string, stateDir: string, retained: number): Promise<void>;
  removeState(stateDir: string, checkpointId: number): Promise<void>;
  /** Write the job's COMMITTED record: which checkpoints' commits its sinks have confirmed. */
  recordCommits(dir: string, record: CommitRecord): Promise<void>;
}

export interface CheckpointCoordinatorDeps<J extends CheckpointedJob = JobState> {
  clock: Clock;
  storage: CheckpointStorage;
  /** Send `m` to every live worker running an unfinished subtask of `job`. */
  postToJob: (job: J, m: Message) => void;
  /**
   * The job's final checkpoint failed (`reason`): its tail cannot be committed without one. The job heals
   * as from any failure (a restart from its last checkpoint writes the tail again, once), or fails when
   * it cannot or the failure is `fatal` (state that cannot be encoded: a restart would repeat it).
   */
  finalFailed: (job: J, reason: string, fatal: boolean) => void;
  /** The job may be complete now (a checkpoint it waited for ended). */
  maybeComplete: (job: J) => void;
  cancel: (jobId: string, reason: string) => void;
  log: Logger;
  metrics: ClinkMetrics;
  /** A checkpoint completing this long after the last restart forgives the restarts spent. */
  restartBudgetResetAfterMs: number;
  /** clink.checkpoint spans, trigger to completion. @default NO_TRACING */
  tracer?: Tracer;
}

/** How long a savepoint waits for a checkpoint already in flight before it is refused as busy. */
export const SAVEPOINT_WAIT_FOR_IDLE_MS = 10_000;
/** Completed checkpoints listed per job (the API's history). */
const CHECKPOINTS_LISTED = 100;

export class CheckpointCoordinator<J extends CheckpointedJob = JobState> {
  /** Who waits for a job's in-flight checkpoint to end (a savepoint). */
  private readonly idleWaiters = new Map<J, (() => void)[]>();

  constructor(private readonly deps: CheckpointCoordinatorDeps<J>) {}

  /** A checkpoint is in flight for `job`, or an id is being claimed for one. */
  busy(job: J): boolean {
    return job.pendingCheckpoint !== undefined || job.startingCheckpoint === true;
  }

  /** On the watchdog's tick: time out overdue checkpoints, start those whose interval has passed. */
  tick(jobs: Iterable<J>): void {
    const now = this.deps.clock.now();
    for (const job of jobs) {
      const c = job.checkpoint;
      if (job.state !== 'RUNNING' || !c.checkpointDir || c.intervalMs <= 0 || job.startingCheckpoint) continue;
      // A hot rescale's checkpoint is its own; the next periodic one waits until the job is rewired.
      if (job.cutover && !job.pendingCheckpoint) continue;
      const p = job.pendingCheckpoint;
      if (p) {
        const timeout = Math.max(10_000, 10 * c.intervalMs);
        if (now - p.startedAt > timeout) {
          const waiting = [...p.pending];
          this.abort(job, 'expired', `not complete within ${timeout} ms (no ack from ${waiting.slice(0, 5).join(', ')}${waiting.length > 5 ? ` and ${waiting.length - 5} more` : ''})`);
        }
        continue;
      }
      if (now - job.lastCheckpointAt < c.intervalMs) continue;
      // Periodic checkpoints run while every subtask runs and the sources have not all ended.
      if (job.subtasks.some((t) => t.finished) || this.finalWanted(job)) continue;
      this.claim(job, jobDir(c.checkpointDir, job.id)).then(
        (id) => {
          if (job.state === 'RUNNING') this.begin(job, id);
          else this.claimed(job);
        },
        (err: unknown) => {
          this.claimed(job);
          job.lastCheckpointAt = this.deps.clock.now();
          this.deps.log.error({ err, jobId: job.id }, `could not claim a checkpoint id for job ${job.id}: ${(err as Error).message}`);
        },
      );
    }
  }

  /**
   * Take a savepoint into `dir`: a checkpoint the client asked for, kept where it says. Waits (up to
   * SAVEPOINT_WAIT_FOR_IDLE_MS) for a checkpoint in flight to end; resolves once its marker is durable;
   * with `cancelAfter` the job is then cancelled.
   */
  async savepoint(job: J, dir: string, cancelAfter: boolean): Promise<SavepointResult> {
    if (!dir) return { ok: false, message: 'a savepoint needs a target directory (--dir)', path: '' };
    if (job.cutover) return { ok: false, message: `job ${job.id} is being rescaled in place; try again when it is done`, path: '' };
    const refused = await this.readyFor(job, 'a savepoint');
    if (refused) return { ok: false, message: refused, path: '' };
    const target = resolvePath(dir);
    let id: number;
    try {
      id = await this.claim(job, job.checkpoint.checkpointDir ? jobDir(job.checkpoint.checkpointDir, job.id) : target);
    } catch (err) {
      this.claimed(job);
      throw err;
    }
    const result = await new Promise<SavepointResult>((done) => this.begin(job, id, { dir: target, done }));
    if (result.ok && cancelAfter) this.deps.cancel(job.id, `cancelled after savepoint ${id}`);
    return result;
  }

  /**
   * Take a checkpoint of the job's own now (a rescale restores from it): as a savepoint waits, but into
   * the job's checkpoint directory. Resolves once its marker is durable, with its id, or refused.
   */
  async checkpointNow(job: J, what: string, beforeTrigger?: (checkpointId: number) => Promise<void>): Promise<{ ok: true; checkpointId: number } | { ok: false; message: string }> {
    if (!job.checkpoint.checkpointDir) return { ok: false, message: `${what} restores from a checkpoint, and job ${job.id} has no checkpoint directory; submit it with --checkpoint-dir` };
    const refused = await this.readyFor(job, what);
    if (refused) return { ok: false, message: refused };
    let id: number;
    try {
      id = await this.claim(job, jobDir(job.checkpoint.checkpointDir, job.id));
    } catch (err) {
      this.claimed(job);
      return { ok: false, message: `${what}: could not claim a checkpoint id: ${(err as Error).message}` };
    }
    if (job.state !== 'RUNNING') {
      this.claimed(job);
      return { ok: false, message: `job ${job.id} is ${job.state}, not RUNNING` };
    }
    try {
      // A hot rescale arms its workers for this id before any barrier of it flows.
      await beforeTrigger?.(id);
    } catch (err) {
      this.claimed(job);
      return { ok: false, message: `${what}: ${(err as Error).message}` };
    }
    const r = await new Promise<{ ok: boolean; message: string }>((done) => this.begin(job, id, undefined, false, done));
    return r.ok ? { ok: true, checkpointId: id } : { ok: false, message: `${what}: ${r.message}` };
  }

  /** Why a checkpoint asked for now cannot be taken (after waiting a while for one in flight), or undefined. */
  private async readyFor(job: J, what: string): Promise<string | undefined> {
    if (this.busy(job)) await this.whenIdle(job, SAVEPOINT_WAIT_FOR_IDLE_MS);
    if (job.state !== 'RUNNING') return `job ${job.id} is ${job.state}, not RUNNING`;
    if (this.busy(job)) return `job ${job.id} has a checkpoint in progress; try again`;
    if (job.subtasks.some((t) => t.finished)) return `${what} needs every subtask of job ${job.id} running`;
    return undefined;
  }

  /** A source subtask reached the end of its input and asks for the final checkpoint. */
  onFinalRequested(job: J, taskId: string, index: number): void {
    (job.finalRequests ??= new Set()).add(subtaskKey(taskId, index));
    this.maybeBeginFinal(job);
  }

  /** Every source subtask of the job has reached the end of its input and waits for the final checkpoint. */
  finalWanted(job: J): boolean {
    const sources = job.plan.tasks.filter((t) => t.inputs.length === 0).reduce((n, t) => n + t.parallelism, 0);
    return (job.finalRequests?.size ?? 0) >= sources;
  }

  /** A subtask's ack. One for a checkpoint no longer pending (aborted, superseded) is dropped. */
  onAck(job: J, m: MessageOf<'SubtaskCheckpointed'>): void {
    const p = job.pendingCheckpoint;
    if (!p || p.id !== m.checkpointId) return;
    const key = subtaskKey(m.taskId, m.subtaskIndex);
    if (!m.ok) {
      this.abort(job, 'declined', `subtask ${key} could not snapshot: ${m.error}`, m.fatal);
      return;
    }
    p.pending.delete(key);
    if (m.commits) p.committers.add(key);
    p.files[key] = { bytes: m.stateBytes, sha256: m.stateSha256 };
    p.bytes += m.stateBytes;
    p.alignmentMs = Math.max(p.alignmentMs, m.alignmentMs);
    if (p.pending.size === 0) {
      const written = this.complete(job, p)
        .catch((err: unknown) => this.deps.log.error({ err, jobId: job.id }, `checkpoint ${p.id} of job ${job.id} could not complete: ${(err as Error).message}`))
        .finally(() => {
        if (job.markerWrite === written) job.markerWrite = undefined;
      });
      job.markerWrite = written;
    }
  }

  /** A worker's subtasks have made visible what they prepared up to checkpoint `m.checkpointId`. */
  onCommitted(job: J, m: MessageOf<'CheckpointCommitted'>): void {
    if (m.error) this.deps.log.warn({ jobId: job.id, checkpointId: m.checkpointId }, `job ${job.id}: a commit of checkpoint ${m.checkpointId} failed: ${m.error}`);
    if (job.commits.confirm(m.checkpointId, m.subtasks)) this.recordCommits(job);
  }

  /** A subtask ended cleanly: it committed all it had prepared. */
  onSubtaskEnded(job: J, key: string): void {
    if (job.commits.ended(key)) this.recordCommits(job);
  }

  /**
   * Write the job's COMMITTED record (under its checkpoint directory; none without one), one write at a
   * time: a write asked for while one is out follows it with the ledger as it then is.
   */
  private recordCommits(job: J): void {
    const dir = job.checkpoint.checkpointDir;
    if (!dir) return;
    const write = async (): Promise<void> => {
      await this.deps.storage.recordCommits(jobDir(dir, job.id), job.commits.record(this.deps.clock.now()));
    };
    const previous = job.commitWrite ?? Promise.resolve();
    const next: Promise<void> = previous
      .then(write)
      .catch((err: unknown) => this.deps.log.warn({ err, jobId: job.id }, `could not record the confirmed commits of job ${job.id}: ${(err as Error).message}`))
      .finally(() => {
        if (job.commitWrite === next) job.commitWrite = undefined;
      });
    job.commitWrite = next;
  }

  /**
   * Give the pending checkpoint up: workers drop its state, a savepoint's caller hears why, a final one
   * fails the job's attempt (`fatal`: the job). `why` is counted and shown; `detail` says what happened.
   */
  abort(job: J, why: CheckpointFailureReason, detail: string, fatal = false): void {
    const p = job.pendingCheckpoint;
    if (!p) return;
    const now = this.deps.clock.now();
    job.pendingCheckpoint = undefined;
    job.lastCheckpointFailure = { checkpointId: p.id, reason: why, detail, at: now };
    job.lastCheckpointAt = now;
    this.notifyIdle(job);
    p.savepoint?.done({ ok: false, message: `savepoint ${p.id} of job ${job.id} failed: ${detail}`, path: '' });
    p.requested?.({ ok: false, message: `checkpoint ${p.id} of job ${job.id} failed: ${detail}` });
    p.span?.end({ 'clink.checkpoint.outcome': 'aborted', 'clink.checkpoint.failure_reason': why }, detail);
    this.deps.metrics.checkpointsAborted.inc({ reason: why });
    this.deps.log.warn({ jobId: job.id, checkpointId: p.id, reason: why }, `checkpoint ${p.id} of job ${job.id} aborted: ${detail}`);
    this.deps.postToJob(job, makeMessage('AbortCheckpoint', { jobId: job.id, checkpointId: p.id, reason: detail }));
    // Whatever state the subtasks wrote for it is never read: remove it (a write still in flight is swept at retention).
    const stateDir = p.savepoint?.dir ?? (job.checkpoint.checkpointDir ? jobStateDir(job.checkpoint, job.id) : undefined);
    if (stateDir) {
      void this.deps.storage
        .removeState(stateDir, p.id)
        .catch((err: unknown) => this.deps.log.warn({ err, jobId: job.id }, `could not remove the state of aborted checkpoint ${p.id}: ${(err as Error).message}`));
    }
    if (p.final) this.failOnFinal(job, detail, fatal);
    else this.maybeBeginFinal(job);
    this.deps.maybeComplete(job);
  }

  /**
   * The job restarts: its checkpoint in flight (a savepoint's caller hears why) and its final
   * checkpoint's requests belong to the abandoned attempt. No abort is posted: the subtasks are cancelled.
   */
  forget(job: J, cause: string): void {
    const p = job.pendingCheckpoint;
    p?.savepoint?.done({ ok: false, message: `savepoint ${p.id} of job ${job.id} failed: ${cause}`, path: '' });
    p?.requested?.({ ok: false, message: `checkpoint ${p.id} of job ${job.id} failed: ${cause}` });
    p?.span?.end({ 'clink.checkpoint.outcome': 'abandoned' }, cause);
    job.pendingCheckpoint = undefined;
    delete job.finalRequests;
    delete job.finalCheckpointId;
    if (!job.startingCheckpoint) this.notifyIdle(job);
  }

  // ---------------------------------------------------------------- internals

  /**
   * Claim the job's next id on the record in `dir`, above its restore point and its last checkpoint.
   * The job is busy from here until begin() (synchronously after the claim) or claimed().
   */
  private claim(job: J, dir: string): Promise<number> {
    job.startingCheckpoint = true;
    return this.deps.storage.claimId(dir, Math.max(job.checkpointFloor, job.checkpoints.at(-1)?.checkpointId ?? 0));
  }

  /** A claim that begins nothing (it failed, or the job stopped running meanwhile). */
  private claimed(job: J): void {
    job.startingCheckpoint = false;
    if (!job.pendingCheckpoint) this.notifyIdle(job);
  }

  /** Wait for every subtask's ack of checkpoint `id`, and ask the workers for them. */
  private begin(job: J, id: number, savepoint?: Pending['savepoint'], final = false, requested?: Pending['requested']): void {
    job.startingCheckpoint = false;
    const now = this.deps.clock.now();
    const kind = savepoint ? 'savepoint' : final ? 'final' : 'periodic';
    job.pendingCheckpoint = {
      span: (this.deps.tracer ?? NO_TRACING).start('clink.checkpoint', { 'clink.job.id': job.id, 'clink.job.name': job.name, 'clink.checkpoint.id': id, 'clink.checkpoint.kind': kind, 'clink.subtasks': job.subtasks.length }),
      id,
      pending: new Set(job.subtasks.map((t) => subtaskKey(t.taskId, t.index))),
      startedAt: now,
      bytes: 0,
      files: {},
      committers: new Set(),
      alignmentMs: 0,
      ...(savepoint ? { savepoint } : {}),
      ...(requested ? { requested } : {}),
      ...(final ? { final } : {}),
    };
    this.deps.postToJob(
      job,
      final
        ? makeMessage('FinalCheckpointAssigned', { jobId: job.id, checkpointId: id })
        : makeMessage('TriggerCheckpoint', { jobId: job.id, checkpointId: id, timestampMs: now, savepointDir: savepoint?.dir ?? '' }),
    );
  }

  /** Every ack is in: write the marker, then commit (or, if it cannot be written, abort). */
  private async complete(job: J, p: Pending): Promise<void> {
    const dir = p.savepoint?.dir ?? jobDir(job.checkpoint.checkpointDir, job.id);
    const marker: CompletedMarker = {
      checkpointId: p.id,
      jobId: job.id,
      jobName: job.name,
      subtasks: job.subtasks.map((t) => subtaskKey(t.taskId, t.index)),
      stateDir: checkpointStateDir(p.savepoint ? dir : jobStateDir(job.checkpoint, job.id), p.id),
      completedAtMs: this.deps.clock.now(),
      stateBytes: p.bytes,
      files: p.files,
      identity: identityOf(job.plan, job.name),
      ...(p.committers.size > 0 ? { committers: [...p.committers].sort() } : {}),
    };
    try {
      await this.deps.storage.writeMarker(dir, marker);
    } catch (err) {
      this.abort(job, 'finalize_failed', `its COMPLETED marker could not be written: ${(err as Error).message}`);
      return;
    }
    const { metrics, log } = this.deps;
    const durationMs = marker.completedAtMs - p.startedAt;
    const kind = p.savepoint ? 'savepoint' : p.final ? 'final' : 'periodic';
    job.checkpoints.push({ checkpointId: p.id, kind, durationMs, stateBytes: p.bytes, alignmentMs: p.alignmentMs, completedAtMs: marker.completedAtMs });
    if (job.checkpoints.length > CHECKPOINTS_LISTED) job.checkpoints.shift();
    job.checkpointsCompleted++;
    job.pendingCheckpoint = undefined;
    job.lastCheckpointAt = this.deps.clock.now();
    this.notifyIdle(job);
    metrics.checkpointsCompleted.inc();
    p.span?.end({ 'clink.checkpoint.outcome': 'completed', 'clink.checkpoint.bytes': p.bytes, 'clink.checkpoint.duration_ms': durationMs, 'clink.checkpoint.alignment_ms': p.alignmentMs });
    metrics.lastCheckpointDurationMs.set(durationMs);
    metrics.lastCheckpointBytes.set(p.bytes);
    metrics.lastCheckpointAlignmentMs.set(p.alignmentMs);
    job.restartsSpent = restartsSpentAfterCheckpoint(job.restartsSpent, job.restarts.at(-1)?.deployedAt, marker.completedAtMs, this.deps.restartBudgetResetAfterMs);
    log.info({ jobId: job.id, checkpointId: p.id, durationMs, stateBytes: p.bytes }, `${p.savepoint ? 'savepoint' : 'checkpoint'} ${p.id} completed for job ${job.id} in ${durationMs} ms (${p.bytes} bytes)`);
    // Each subtask that prepared something owes a confirmation once it has made it visible.
    if (job.commits.owe(p.id, p.committers)) this.recordCommits(job);
    this.deps.postToJob(job, makeMessage('CommitCheckpoint', { jobId: job.id, checkpointId: p.id }));
    p.requested?.({ ok: true, message: `checkpoint ${p.id} of job ${job.id} completed` });
    if (p.savepoint) p.savepoint.done({ ok: true, message: `savepoint ${p.id} of job ${job.id} written to ${dir}`, path: dir });
    else {
      const retained = job.checkpoint.checkpointsRetained;
      await this.deps.storage
        .retain(dir, jobStateDir(job.checkpoint, job.id), retained)
        .catch((err: unknown) => log.warn({ err, jobId: job.id }, `could not delete checkpoints of job ${job.id} beyond the ${retained} retained: ${(err as Error).message}`));
    }
    this.maybeBeginFinal(job);
    this.deps.maybeComplete(job);
  }

  /**
   * Once every source has ended (and no other checkpoint is in flight), claim one id and assign it to
   * every source as the final checkpoint: its barrier follows their last record, and the sinks commit
   * the job's tail when it completes.
   */
  private maybeBeginFinal(job: J): void {
    if (job.state !== 'RUNNING' || job.finalCheckpointId !== undefined || this.busy(job) || !this.finalWanted(job)) return;
    this.claim(job, jobDir(job.checkpoint.checkpointDir, job.id)).then(
      (id) => {
        if (job.state !== 'RUNNING') return this.claimed(job);
        job.finalCheckpointId = id;
        this.begin(job, id, undefined, true);
      },
      (err: unknown) => {
        this.claimed(job);
        this.failOnFinal(job, `no id could be claimed for it: ${(err as Error).message}`, false);
      },
    );
  }

  /** Without its final checkpoint a job's tail cannot be committed exactly once: the attempt fails. */
  private failOnFinal(job: J, reason: string, fatal: boolean): void {
    this.deps.log.error({ jobId: job.id }, `the final checkpoint of job ${job.id} failed: ${reason}`);
    this.deps.finalFailed(job, `its final checkpoint failed: ${reason}`, fatal);
    this.deps.maybeComplete(job);
  }

  /** Resolves when no checkpoint of `job` is in flight, or after `ms`. */
  private whenIdle(job: J, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.deps.clock.after(ms, () => done());
      const done = (): void => {
        cancel();
        const list = this.idleWaiters.get(job);
        const i = list?.indexOf(done) ?? -1;
        if (i >= 0) list!.splice(i, 1);
        if (list?.length === 0) this.idleWaiters.delete(job);
        resolve();
      };
      (this.idleWaiters.get(job) ?? this.idleWaiters.set(job, []).get(job)!).push(done);
    });
  }

  private notifyIdle(job: J): void {
    for (const w of [...(this.idleWaiters.get(job) ?? [])]) w();
  }
}
