/**
 * A job's checkpoint coordinator (one per job, owning its checkpoints' bookkeeping): for a job with a
 * checkpoint directory it triggers periodic checkpoints, collects each subtask's ack, writes the
 * COMPLETED marker once all are in, tells the workers to commit (or abort), takes savepoints on request
 * and the final checkpoint once every source has ended (final-checkpoint.ts says when). As Flink's, a periodic checkpoint is triggered an
 * interval after the last was, but no sooner than the minimum pause after the last ended; one not
 * complete within its timeout is aborted; more consecutive failed periodic checkpoints than the job
 * tolerates restart it.
 *
 * It reads its job and writes none of it; what it asks of the job (posts to its workers, a failure of
 * its final checkpoint) goes through a CheckpointPort, and the clock and storage are shared services,
 * so its decisions are unit-tested in-process on a fake clock.
 */
import { resolve as resolvePath } from 'node:path';
import { NO_TRACING, type CheckpointFailureReason } from '../metrics/index.js';
import { subtaskKey } from '../plan/index.js';
import { makeMessage, type MessageOf } from '../protocol/index.js';
import { jobStateDir } from '../state/index.js';
import { Waiters } from '../util/index.js';
import { completedMarker, jobDir } from './checkpoint-storage.js';
import { ConfirmedCommits } from './confirmed-commits.js';
import { FinalCheckpointGate } from './final-checkpoint.js';
import { CheckpointHistory, reportCompleted } from './checkpoint-history.js';
import type {
  CheckpointedJob,
  CheckpointPort,
  CheckpointServices,
  PendingCheckpoint,
  SavepointResult,
} from './checkpoint-ports.js';

/** How long a savepoint waits for a checkpoint already in flight before it is refused as busy. */
export const SAVEPOINT_WAIT_FOR_IDLE_MS = 10_000;
/** Flink's checkpoint timeout, for a job without periodic checkpoints (its savepoints). */
const TIMEOUT_WITHOUT_INTERVAL_MS = 600_000;

/** How long a checkpoint of a job with these settings may take before it is aborted. */
export function checkpointTimeoutMs(c: { timeoutMs: number; intervalMs: number }): number {
  if (c.timeoutMs > 0) return c.timeoutMs;
  return c.intervalMs > 0 ? Math.max(10_000, 10 * c.intervalMs) : TIMEOUT_WITHOUT_INTERVAL_MS;
}

/**
 * How a job's periodic checkpoints start, and after how long an aligned one becomes unaligned
 * (0: never). As Flink's unaligned checkpoints with an aligned-checkpoint-timeout: `adaptive` (or
 * `unaligned`) with a timeout starts aligned; without one, unaligned from the start.
 */
export function periodicAlignment(c: { alignment: string; alignedTimeoutMs: number }): {
  unaligned: boolean;
  switchAfterMs: number;
} {
  if (c.alignment === 'aligned') return { unaligned: false, switchAfterMs: 0 };
  if (c.alignedTimeoutMs > 0) return { unaligned: false, switchAfterMs: c.alignedTimeoutMs };
  return { unaligned: true, switchAfterMs: 0 };
}

export class CheckpointCoordinator {
  private pending: PendingCheckpoint | undefined;
  /** An id is being claimed: the job is busy from the claim until begin() or claimed(). */
  private starting = false;
  /**
   * A checkpoint whose acks are all in while its COMPLETED marker is being written. A restart reads its
   * restore point only after this settles: sinks that survive the failure may still commit the
   * checkpoint, so the restore must not start from the one before it.
   */
  private writingMarker: Promise<void> | undefined;
  /** Whether the final checkpoint may begin: the sources' requests, and the backlog ahead of it. */
  private readonly finalGate = new FinalCheckpointGate(
    () => this.job.plan.tasks.filter((t) => t.inputs.length === 0).reduce((n, t) => n + t.parallelism, 0),
    () => {
      const alignment = periodicAlignment(this.job.checkpoint);
      return this.periodicScheduled() && (alignment.unaligned || alignment.switchAfterMs > 0);
    },
  );
  /** The final checkpoint's id, once claimed. */
  private finalCheckpointId: number | undefined;
  /** When the last periodic checkpoint was triggered (or the attempt began), and when the last checkpoint ended. */
  private lastTriggeredAt: number;
  private lastEndedAt = -Infinity;
  /** Periodic checkpoints failed since the last completed (Flink's tolerable-failed-checkpoints counts these). */
  private consecutiveFailures = 0;
  /** An aligned periodic checkpoint was given up past its aligned timeout: the next periodic one is unaligned, at once. */
  private switchToUnaligned = false;
  /** Checkpoint ids of this job number above this (the checkpoint it restored from). */
  private floor: number;
  /** The completed checkpoints, and the latest aborted. */
  readonly history = new CheckpointHistory();
  /** Which completed checkpoints' commits the job's sinks have confirmed, and the COMMITTED record. */
  readonly commits: ConfirmedCommits;
  /** Who waits for the checkpoint in flight to end (a savepoint). */
  private readonly idle = new Waiters();

  constructor(
    private readonly job: CheckpointedJob,
    private readonly port: CheckpointPort,
    private readonly services: CheckpointServices,
    /** The checkpoint the job restored from: its ids number above it. */
    restoredFrom = 0,
  ) {
    this.floor = restoredFrom;
    this.commits = new ConfirmedCommits(job, services);
    this.lastTriggeredAt = services.clock.now();
  }

  /** The checkpoint in flight (read-only to others). */
  get inFlight(): Readonly<PendingCheckpoint> | undefined {
    return this.pending;
  }

  /** A checkpoint is in flight, or an id is being claimed for one. */
  busy(): boolean {
    return this.pending !== undefined || this.starting;
  }

  /** Settles once a COMPLETED marker being written (if any) is durable, or failed. */
  markerWritten(): Promise<void> | undefined {
    return this.writingMarker;
  }

  /** The job must not end yet: its final checkpoint is in flight or being claimed. */
  holdsCompletion(): boolean {
    return this.pending?.final === true || (this.starting && this.finalWanted());
  }

  /** A new attempt of the job runs from checkpoint `restoredFrom` (0: the beginning): ids stay above it, the interval starts now. */
  resume(restoredFrom: number): void {
    this.floor = Math.max(this.floor, restoredFrom);
    this.lastTriggeredAt = this.services.clock.now();
    this.consecutiveFailures = 0;
  }

  /** On the watchdog's tick: time out an overdue checkpoint, start one whose interval has passed. */
  tick(): void {
    const job = this.job;
    const now = this.services.clock.now();
    const c = job.checkpoint;
    if (job.state !== 'RUNNING' || this.starting) return;
    const p = this.pending;
    const switchAfterMs = periodicAlignment(c).switchAfterMs;
    if (p && switchAfterMs > 0 && this.periodic(p) && !p.unaligned && now - p.startedAt > switchAfterMs) {
      // Adaptive: the records ahead of its barriers take too long; its barriers overtake them instead,
      // converted in place (as in Flink). A worker too old to be told so has it taken again unaligned.
      if (this.port.convertsInPlace()) {
        p.unaligned = true;
        this.services.log.info(
          { jobId: job.id, checkpointId: p.id },
          `checkpoint ${p.id} of job ${job.id} aligned for over ${switchAfterMs} ms (--aligned-checkpoint-timeout-ms): its barriers overtake from here`,
        );
        this.port.post(makeMessage('ConvertCheckpoint', { jobId: job.id, checkpointId: p.id }));
        return;
      }
      this.abort(
        'switched_to_unaligned',
        `aligned for over ${switchAfterMs} ms (--aligned-checkpoint-timeout-ms), and a worker of the job speaks a protocol before in-place conversion: taken again unaligned`,
      );
      this.switchToUnaligned = true;
      if (this.pending || this.starting) return;
    } else if (p) {
      const timeout = checkpointTimeoutMs(c);
      if (now - p.startedAt > timeout) {
        const waiting = [...p.pending];
        this.abort(
          'expired',
          `not complete within ${timeout} ms (no ack from ${waiting.slice(0, 5).join(', ')}${waiting.length > 5 ? ` and ${waiting.length - 5} more` : ''})`,
        );
      }
      return;
    }
    if (!this.periodicScheduled()) return;
    // A hot rescale's checkpoint is its own; the next periodic one waits until the job is rewired.
    if (job.cutover) return;
    const due = now - this.lastTriggeredAt >= c.intervalMs && now - this.lastEndedAt >= c.minPauseMs;
    if (!due && !this.switchToUnaligned) return;
    // Periodic checkpoints run while every subtask runs and the final one may not begin yet.
    if (job.subtasks.some((t) => t.finished) || this.finalGate.ready()) return;
    this.claim(jobDir(c.checkpointDir, job.id)).then(
      (id) => {
        if (job.state === 'RUNNING') this.begin(id);
        else this.claimed();
      },
      (err: unknown) => {
        this.claimed();
        this.lastTriggeredAt = this.services.clock.now();
        this.services.log.error(
          { err, jobId: job.id },
          `could not claim a checkpoint id for job ${job.id}: ${(err as Error).message}`,
        );
      },
    );
  }

  /**
   * Take a savepoint into `dir`: a checkpoint the client asked for, kept where it says. Waits (up to
   * SAVEPOINT_WAIT_FOR_IDLE_MS) for a checkpoint in flight to end; resolves once its marker is durable;
   * with `cancelAfter` the job is then cancelled.
   */
  async savepoint(dir: string, cancelAfter: boolean): Promise<SavepointResult> {
    const job = this.job;
    if (!dir) return { ok: false, message: 'a savepoint needs a target directory (--dir)', path: '' };
    if (job.cutover)
      return { ok: false, message: `job ${job.id} is being rescaled in place; try again when it is done`, path: '' };
    const refused = await this.readyFor('a savepoint');
    if (refused) return { ok: false, message: refused, path: '' };
    const target = resolvePath(dir);
    const id = await this.claimNow(
      job.checkpoint.checkpointDir ? jobDir(job.checkpoint.checkpointDir, job.id) : target,
    );
    const result = await new Promise<SavepointResult>((done) => this.begin(id, { dir: target, done }));
    if (result.ok && cancelAfter) this.port.cancel(`cancelled after savepoint ${id}`);
    return result;
  }

  /**
   * Take a checkpoint of the job's own now (a rescale restores from it): as a savepoint waits, but into
   * the job's checkpoint directory. Resolves once its marker is durable, with its id, or refused.
   */
  async checkpointNow(
    what: string,
    beforeTrigger?: (checkpointId: number) => Promise<void>,
  ): Promise<{ ok: true; checkpointId: number } | { ok: false; message: string }> {
    const job = this.job;
    if (!job.checkpoint.checkpointDir)
      return {
        ok: false,
        message: `${what} restores from a checkpoint, and job ${job.id} has no checkpoint directory; submit it with --checkpoint-dir`,
      };
    const refused = await this.readyFor(what);
    if (refused) return { ok: false, message: refused };
    let id: number;
    try {
      id = await this.claimNow(jobDir(job.checkpoint.checkpointDir, job.id));
    } catch (err) {
      return { ok: false, message: `${what}: could not claim a checkpoint id: ${(err as Error).message}` };
    }
    if (job.state !== 'RUNNING') {
      this.claimed();
      return { ok: false, message: `job ${job.id} is ${job.state}, not RUNNING` };
    }
    try {
      // A hot rescale arms its workers for this id before any barrier of it flows.
      await beforeTrigger?.(id);
    } catch (err) {
      this.claimed();
      return { ok: false, message: `${what}: ${(err as Error).message}` };
    }
    const r = await new Promise<{ ok: boolean; message: string }>((done) => this.begin(id, undefined, false, done));
    return r.ok ? { ok: true, checkpointId: id } : { ok: false, message: `${what}: ${r.message}` };
  }

  /** Why a checkpoint asked for now cannot be taken (after waiting a while for one in flight), or undefined. */
  private async readyFor(what: string): Promise<string | undefined> {
    const job = this.job;
    if (this.busy()) await this.idle.wait(this.services.clock, SAVEPOINT_WAIT_FOR_IDLE_MS);
    if (job.state !== 'RUNNING') return `job ${job.id} is ${job.state}, not RUNNING`;
    if (this.busy()) return `job ${job.id} has a checkpoint in progress; try again`;
    if (job.subtasks.some((t) => t.finished)) return `${what} needs every subtask of job ${job.id} running`;
    return undefined;
  }

  /** A source subtask reached the end of its input and asks for the final checkpoint. */
  onFinalRequested(taskId: string, index: number): void {
    this.finalGate.request(subtaskKey(taskId, index));
    this.maybeBeginFinal();
  }

  /** Every source subtask of the job has reached the end of its input and waits for the final checkpoint. */
  finalWanted(): boolean {
    return this.finalGate.wanted();
  }

  /** A subtask's ack. One for a checkpoint no longer pending (aborted, superseded) is dropped. */
  onAck(m: MessageOf<'SubtaskCheckpointed'>): void {
    const p = this.pending;
    if (!p || p.id !== m.checkpointId) return;
    const key = subtaskKey(m.taskId, m.subtaskIndex);
    if (!m.ok) {
      this.abort('declined', `subtask ${key} could not snapshot: ${m.error}`, m.fatal);
      return;
    }
    p.pending.delete(key);
    if (m.commits) p.committers.add(key);
    p.files[key] = { bytes: m.stateBytes, sha256: m.stateSha256 };
    p.bytes += m.stateBytes;
    p.alignmentMs = Math.max(p.alignmentMs, m.alignmentMs);
    p.acks[key] = {
      ackMs: this.services.clock.now() - p.startedAt,
      startDelayMs: m.startDelayMs,
      alignmentMs: m.alignmentMs,
      stateBytes: m.stateBytes,
      inflightBytes: m.inflightBytes,
      unaligned: m.unaligned,
    };
    if (p.pending.size > 0) return;
    const written = this.complete(p)
      .catch((err: unknown) =>
        this.services.log.error(
          { err, jobId: this.job.id },
          `checkpoint ${p.id} of job ${this.job.id} could not complete: ${(err as Error).message}`,
        ),
      )
      .finally(() => {
        if (this.writingMarker === written) this.writingMarker = undefined;
      });
    this.writingMarker = written;
  }

  /**
   * Give the pending checkpoint up: workers drop its state, a savepoint's caller hears why, a final one
   * fails the job's attempt (`fatal`: the job). `why` is counted and shown; `detail` says what happened.
   */
  abort(why: CheckpointFailureReason, detail: string, fatal = false): void {
    const { job, services } = this;
    const p = this.pending;
    if (!p) return;
    const now = services.clock.now();
    this.pending = undefined;
    this.history.aborted({ checkpointId: p.id, reason: why, detail, at: now });
    this.lastEndedAt = now;
    this.idle.wake();
    p.savepoint?.done({ ok: false, message: `savepoint ${p.id} of job ${job.id} failed: ${detail}`, path: '' });
    p.requested?.({ ok: false, message: `checkpoint ${p.id} of job ${job.id} failed: ${detail}` });
    p.span?.end({ 'clink.checkpoint.outcome': 'aborted', 'clink.checkpoint.failure_reason': why }, detail);
    services.metrics.checkpointsAborted.inc({ reason: why });
    services.log.warn(
      { jobId: job.id, checkpointId: p.id, reason: why },
      `checkpoint ${p.id} of job ${job.id} aborted: ${detail}`,
    );
    this.port.post(makeMessage('AbortCheckpoint', { jobId: job.id, checkpointId: p.id, reason: detail }));
    // Whatever state the subtasks wrote for it is never read: remove it (a write still in flight is swept at retention).
    const stateDir =
      p.savepoint?.dir ?? (job.checkpoint.checkpointDir ? jobStateDir(job.checkpoint, job.id) : undefined);
    if (stateDir) {
      void services.storage
        .removeState(stateDir, p.id)
        .catch((err: unknown) =>
          services.log.warn(
            { err, jobId: job.id },
            `could not remove the state of aborted checkpoint ${p.id}: ${(err as Error).message}`,
          ),
        );
    }
    if (p.afterSourcesEnded && why !== 'switched_to_unaligned') this.finalGate.periodicEnded(undefined);
    if (p.final) this.failOnFinal(detail, fatal);
    // Taken again unaligned at once: not a failure.
    else if (this.periodic(p) && why !== 'switched_to_unaligned' && this.tooManyFailures(detail)) return;
    else this.maybeBeginFinal();
    this.port.maybeComplete();
  }

  /** The job takes periodic checkpoints: it has a directory and an interval. */
  private periodicScheduled(): boolean {
    const c = this.job.checkpoint;
    return c.checkpointDir !== '' && c.intervalMs > 0;
  }

  /** A checkpoint the timer triggered (not a savepoint, the final one, or one asked for now). */
  private periodic(p: PendingCheckpoint): boolean {
    return !p.savepoint && !p.final && !p.requested;
  }

  /** One more periodic checkpoint failed: past the job's tolerance, it restarts from its last checkpoint. */
  private tooManyFailures(detail: string): boolean {
    const tolerable = this.job.checkpoint.tolerableFailures;
    this.consecutiveFailures++;
    if (tolerable < 0 || this.consecutiveFailures <= tolerable) return false;
    const failed = this.consecutiveFailures;
    this.consecutiveFailures = 0;
    this.port.failed(
      `${failed} consecutive checkpoints failed, more than the ${tolerable} it tolerates (--tolerable-failed-checkpoints); the last: ${detail}`,
      false,
    );
    return true;
  }

  /**
   * The job restarts: its checkpoint in flight (a savepoint's caller hears why) and its final
   * checkpoint's requests belong to the abandoned attempt. No abort is posted: the subtasks are cancelled.
   */
  forget(cause: string): void {
    const p = this.pending;
    p?.savepoint?.done({ ok: false, message: `savepoint ${p.id} of job ${this.job.id} failed: ${cause}`, path: '' });
    p?.requested?.({ ok: false, message: `checkpoint ${p.id} of job ${this.job.id} failed: ${cause}` });
    p?.span?.end({ 'clink.checkpoint.outcome': 'abandoned' }, cause);
    this.pending = undefined;
    this.finalGate.reset();
    this.finalCheckpointId = undefined;
    if (!this.starting) this.idle.wake();
  }

  // ---------------------------------------------------------------- internals

  /**
   * Claim the job's next id on the record in `dir`, above its restore point and its last checkpoint.
   * The job is busy from here until begin() (synchronously after the claim) or claimed().
   */
  private claim(dir: string): Promise<number> {
    this.starting = true;
    return this.services.storage.claimId(dir, Math.max(this.floor, this.history.lastId));
  }

  /** Claim an id for a checkpoint asked for now; a failed claim leaves the job idle again. */
  private async claimNow(dir: string): Promise<number> {
    try {
      return await this.claim(dir);
    } catch (err) {
      this.claimed();
      throw err;
    }
  }

  /** A claim that begins nothing (it failed, or the job stopped running meanwhile). */
  private claimed(): void {
    this.starting = false;
    if (!this.pending) this.idle.wake();
  }

  /** Wait for every subtask's ack of checkpoint `id`, and ask the workers for them. */
  private begin(
    id: number,
    savepoint?: PendingCheckpoint['savepoint'],
    final = false,
    requested?: PendingCheckpoint['requested'],
  ): void {
    const job = this.job;
    this.starting = false;
    const now = this.services.clock.now();
    const kind = savepoint ? 'savepoint' : final ? 'final' : 'periodic';
    const periodic = !savepoint && !final && !requested;
    if (periodic) this.lastTriggeredAt = now;
    // A savepoint is always aligned (as in Flink), and so are a rescale's own and the final checkpoint.
    const unaligned = periodic && (this.switchToUnaligned || periodicAlignment(job.checkpoint).unaligned);
    if (periodic) this.switchToUnaligned = false;
    this.pending = {
      span: (this.services.tracer ?? NO_TRACING).start('clink.checkpoint', {
        'clink.job.id': job.id,
        'clink.job.name': job.name,
        'clink.checkpoint.id': id,
        'clink.checkpoint.kind': kind,
        'clink.subtasks': job.subtasks.length,
      }),
      id,
      pending: new Set(job.subtasks.map((t) => subtaskKey(t.taskId, t.index))),
      startedAt: now,
      bytes: 0,
      files: {},
      committers: new Set(),
      alignmentMs: 0,
      unaligned,
      acks: {},
      ...(savepoint ? { savepoint } : {}),
      ...(requested ? { requested } : {}),
      ...(final ? { final } : {}),
      ...(periodic && this.finalGate.wanted() ? { afterSourcesEnded: true } : {}),
    };
    this.port.post(
      final
        ? makeMessage('FinalCheckpointAssigned', { jobId: job.id, checkpointId: id })
        : makeMessage('TriggerCheckpoint', {
            jobId: job.id,
            checkpointId: id,
            timestampMs: now,
            savepointDir: savepoint?.dir ?? '',
            unaligned,
          }),
    );
  }

  /** Every ack is in: write the marker, then commit (or, if it cannot be written, abort). */
  private async complete(p: PendingCheckpoint): Promise<void> {
    const { job, services } = this;
    const dir = p.savepoint?.dir ?? jobDir(job.checkpoint.checkpointDir, job.id);
    const marker = completedMarker(job, p, dir, services.clock.now());
    try {
      await services.storage.writeMarker(dir, marker);
    } catch (err) {
      this.abort('finalize_failed', `its COMPLETED marker could not be written: ${(err as Error).message}`);
      return;
    }
    const completed = reportCompleted(services, job.id, p, marker.completedAtMs);
    this.history.add(completed);
    this.pending = undefined;
    this.lastEndedAt = services.clock.now();
    if (this.periodic(p)) this.consecutiveFailures = 0;
    if (p.afterSourcesEnded) this.finalGate.periodicEnded(completed.inflightBytes);
    this.idle.wake();
    this.port.completed?.(marker.completedAtMs);
    // Each subtask that prepared something owes a confirmation once it has made it visible.
    this.commits.owe(p.id, p.committers);
    this.port.post(makeMessage('CommitCheckpoint', { jobId: job.id, checkpointId: p.id }));
    p.requested?.({ ok: true, message: `checkpoint ${p.id} of job ${job.id} completed` });
    if (p.savepoint)
      p.savepoint.done({ ok: true, message: `savepoint ${p.id} of job ${job.id} written to ${dir}`, path: dir });
    else {
      const retained = job.checkpoint.checkpointsRetained;
      await services.storage
        .retain(dir, jobStateDir(job.checkpoint, job.id), retained)
        .catch((err: unknown) =>
          services.log.warn(
            { err, jobId: job.id },
            `could not delete checkpoints of job ${job.id} beyond the ${retained} retained: ${(err as Error).message}`,
          ),
        );
    }
    this.maybeBeginFinal();
    this.port.maybeComplete();
  }

  /**
   * Once every source has ended (and no other checkpoint is in flight), claim one id and assign it to
   * every source as the final checkpoint: its barrier follows their last record, and the sinks commit
   * the job's tail when it completes.
   */
  private maybeBeginFinal(): void {
    const job = this.job;
    if (job.state !== 'RUNNING' || this.finalCheckpointId !== undefined || this.busy() || !this.finalGate.ready())
      return;
    this.claim(jobDir(job.checkpoint.checkpointDir, job.id)).then(
      (id) => {
        if (job.state !== 'RUNNING') return this.claimed();
        this.finalCheckpointId = id;
        this.begin(id, undefined, true);
      },
      (err: unknown) => {
        this.claimed();
        this.failOnFinal(`no id could be claimed for it: ${(err as Error).message}`, false);
      },
    );
  }

  /** Without its final checkpoint a job's tail cannot be committed exactly once: the attempt fails. */
  private failOnFinal(reason: string, fatal: boolean): void {
    this.services.log.error({ jobId: this.job.id }, `the final checkpoint of job ${this.job.id} failed: ${reason}`);
    this.port.failed(`its final checkpoint failed: ${reason}`, fatal);
    this.port.maybeComplete();
  }
}
