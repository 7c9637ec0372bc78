/**
 * SubtaskRunner: runs one parallel instance of a task (a chain of operators): its lifecycle, its part in
 * checkpoints, and what happens between batches. A source task pulls batches from its reader
 * (source-loop.ts); other tasks take them from their InputQueue (input-loop.ts). Each batch is pushed
 * through the chain by direct calls; between batches the task waits for room downstream
 * (backpressure) and yields to the event loop now and then, so timers and sockets are never starved.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { TaskSpec } from '../plan/index.js';
import type { SourceReader } from '../sdk/index.js';
import { abortable } from '../util/index.js';
import { CutoverGate } from './cutover-gate.js';
import { markFatal } from '../errors.js';
import type { StreamOperator } from './operator.js';
import { isRescaled, restoreRescaled, type RestoreSnapshot } from './rescale.js';
import { SinkOperator } from './operators/basic.js';
import { KeyedOperator } from './operators/keyed.js';
import type { InputQueue } from './queue.js';
import type { ProcessingTimeService } from './timers.js';
import type { RecordWriter } from './writer.js';
import { WaitClock } from './wait-clock.js';
import { abortFlag } from './abort-flag.js';
import type { InflightBatch } from './inflight.js';
import { SubtaskPhase, type SubtaskPhaseCode } from './phase.js';
import { InputLoop } from './input-loop.js';
import { SourceLoop } from './source-loop.js';
import type { BarrierOptions, LoopHost } from './task-loop.js';

export { SubtaskPhase, PHASE_DESCRIPTIONS, type SubtaskPhaseCode } from './phase.js';

/** How long a task may run batches back to back before it lets other work on the event loop run. */
export const YIELD_INTERVAL_MS = 10;
/**
 * Between those, a source task running as long as this since its thread last gave way gives way again,
 * without sending its partly filled batches: the thread's other tasks take what it sent while it is
 * fresh, and frames from other processes (records, watermarks, credits) are read within a millisecond,
 * not a ten-millisecond turn. Only a source: a task with inputs waits whenever its queue runs dry, and
 * one that gave way between a batch and the next element let its siblings run ahead of it (Nexmark q4's
 * two filter branches reached its co-process skewed, ~1.3x its timers). One clock per thread (module
 * state): the tasks of a thread share its event loop.
 */
const GIVE_WAY_INTERVAL_MS = 1;
let threadGaveWayAt = 0;

export type SubtaskState = 'CREATED' | 'RUNNING' | 'FINISHED' | 'RETIRED' | 'FAILED' | 'CANCELED';

export interface SubtaskSetup {
  task: TaskSpec;
  index: number;
  operators: StreamOperator[];
  writer: RecordWriter;
  time: ProcessingTimeService;
  signal: AbortSignal;
  batchSize: number;
  /** The clock the task's yields are timed by (YIELD_INTERVAL_MS, GIVE_WAY_INTERVAL_MS), in ms: performance.now outside tests. */
  now: () => number;
  /** For non-source tasks: the input and, per channel, which operator input it feeds. */
  input?: { queue: InputQueue; channelInputs: number[] };
  /** For source tasks. */
  createReader?: () => SourceReader<unknown> | Promise<SourceReader<unknown>>;
  /** State to resume from, taken by an earlier run's checkpoint (at this parallelism or, rescaled, another). */
  restore?: RestoreSnapshot;
  /** A source restored at another parallelism: its position, divided by its connector (runtime/rescale.ts). */
  rescaledPosition?: () => Promise<unknown>;
  /** Receives this subtask's snapshot for each checkpoint, once it is encoded, and how long its barriers took to align. */
  /** `commits`: an operator holds what this checkpoint's completion makes visible (it confirms the commit). */
  onSnapshot?: (checkpointId: number, snapshot: SubtaskSnapshot, stats: SnapshotStats) => void;
  /** Buffer debloating: a task with inputs asks for batches of about this much of its work queued (debloat.ts); 0: off. */
  debloatTargetMs?: number;
  /** Per operator input of the head operator, its key (a keyed head): a rescaled restore divides in-flight records by it. */
  inputKeys?: readonly (((value: unknown) => unknown) | undefined)[];
  /** A snapshot that could not be taken (its state would not encode): the checkpoint must abort. */
  onSnapshotFailed?: (checkpointId: number, error: unknown) => void;
  /** A newer barrier cancelled the alignment of `checkpointId` (that checkpoint was given up upstream). */
  onAlignmentCancelled?: (checkpointId: number, by: number) => void;
  /** Told what the subtask starts doing (see SubtaskPhase). */
  onPhase?: (phase: SubtaskPhaseCode) => void;
  /**
   * For a job whose checkpoints are durable: a source at the end of its input asks for the job-wide
   * final checkpoint, whose barrier it sends before its end, so the tail after the last periodic
   * checkpoint is committed through a checkpoint too. Resolves with that checkpoint's id.
   */
  finalCheckpoint?: () => Promise<number>;
}

/** One subtask's part of a checkpoint: each chained operator's state and, for a source, its position. */
export interface SubtaskSnapshot {
  operators: unknown[];
  source?: unknown;
  /** An unaligned checkpoint's: the records in flight to this subtask, replayed on restore before anything new. */
  inflight?: InflightBatch[];
}

/** How a subtask's part of a checkpoint was taken. */
export interface SnapshotStats {
  /** From the first barrier of the checkpoint at the subtask to the last (0 for a source, or unaligned). */
  alignmentMs: number;
  /** An operator holds what this checkpoint's completion makes visible (it confirms the commit). */
  commits: boolean;
  /** Its barrier overtook the records ahead of it. */
  unaligned: boolean;
  /** Bytes of in-flight records written with it. */
  inflightBytes: number;
  /** When (the subtask's clock) it took its first barrier of the checkpoint, or injected it. */
  barrierAt: number;
}

/** Thrown out of a retiring subtask's loop: it ends quietly, its outputs closed, its operators not finished. */
class Retired extends Error {}

export class SubtaskRunner {
  state: SubtaskState = 'CREATED';
  /** Waits for room downstream (backpressure), on the task's clock as everything it times. */
  private readonly backpressure: WaitClock;
  /** Waits for input (a source: for a read that had nothing yet, or was paced). */
  private readonly idle: WaitClock;
  /** Time spent waiting for room downstream, the wait under way included. */
  get backpressuredMs(): number {
    return this.backpressure.totalMs;
  }
  /** Time spent waiting for input, the wait under way included. */
  get idleMs(): number {
    return this.idle.totalMs;
  }
  private readonly createdAt: number;
  /** Time since this subtask was created: the clock its wait times are read on. */
  get ageMs(): number {
    return this.setup.now() - this.createdAt;
  }
  private lastYield = 0;
  /** Where records come from and barriers wait: a source's reader, or an input queue. */
  private readonly loop: SourceLoop | InputLoop;
  /** Checkpoints asked of this subtask, and those it has taken its part in. */
  private readonly requested = new Set<number>();
  private readonly taken = new Set<number>();
  /**
   * Wakes a wait that barriers may interrupt: a source's for its final checkpoint id or for room
   * downstream when a barrier is asked of it, an input task's for room when an unaligned barrier comes.
   */
  private wakeWaiting: (() => void) | undefined;
  /** A hot rescale's gate: armed, the subtask waits at it after that checkpoint's barrier. */
  readonly cutover = new CutoverGate();

  constructor(readonly setup: SubtaskSetup) {
    this.backpressure = new WaitClock(setup.now);
    this.idle = new WaitClock(setup.now);
    this.createdAt = setup.now();
    const host: LoopHost = {
      setup,
      idle: this.idle,
      checkpoint: (id, o) => this.checkpoint(id, o),
      afterBatch: () => this.afterBatch(),
      beforeWait: () => this.beforeWait(),
      bounded: (v) => this.bounded(v),
      wakeable: (p) => this.wakeable(p),
      wake: () => this.wakeWaiting?.(),
    };
    this.loop = setup.createReader ? new SourceLoop(host) : new InputLoop(host);
  }

  /** Records taken in: a source's read, a task's processed. */
  get recordsIn(): number {
    return this.loop.recordsIn;
  }

  /** Records handed downstream, or for a task that ends in a sink, records the sink wrote. */
  get recordsOut(): number {
    const tail = this.setup.operators[this.setup.operators.length - 1];
    return tail instanceof SinkOperator ? tail.recordsIn : this.setup.writer.recordsOut;
  }

  /** Keyed state values its operators removed as their TTL ran out (StateTtlConfig). */
  get stateExpired(): number {
    let n = 0;
    for (const op of this.setup.operators) if (op instanceof KeyedOperator && op.backend) n += op.backend.ttl.expired;
    return n;
  }

  /** A source's lag behind its input (SourceReader.lag), 0 when it cannot tell or is no source. */
  get lag(): number {
    return this.loop instanceof SourceLoop ? this.loop.lag : 0;
  }

  /** The last watermark this subtask emitted (NO_TIMESTAMP until one is). */
  get watermark(): number {
    return this.setup.writer.watermark;
  }

  get id(): string {
    return `${this.setup.task.name} (${this.setup.index + 1}/${this.setup.task.parallelism})`;
  }

  async run(): Promise<void> {
    const { operators } = this.setup;
    this.state = 'RUNNING';
    this.lastYield = this.setup.now();
    try {
      // A failure while opening would recur on every restart: it is fatal, unless a connector says the
      // system it talks to was unreachable (that may pass). A failure while restoring is restarted like
      // any other (the files were verified before the deploy; what fails here is the machine's, not the
      // job's), within the job's restart strategy.
      this.setup.onPhase?.(SubtaskPhase.STARTING);
      try {
        for (let i = operators.length - 1; i >= 0; i--) await this.bounded(operators[i]!.open());
      } catch (err) {
        throw this.setup.signal.aborted ? err : markFatal(err);
      }
      const restore = this.setup.restore;
      if (restore) {
        if (isRescaled(restore))
          await restoreRescaled(operators, restore, this.setup.index, this.setup.task.parallelism);
        else for (const [i, op] of operators.entries()) await op.restoreState(restore.operators[i]);
        try {
          for (const op of operators) await this.bounded(op.afterRestore());
        } catch (err) {
          throw this.setup.signal.aborted ? err : markFatal(err);
        }
      }
      try {
        await this.loop.run();
      } catch (err) {
        if (!(err instanceof Retired)) throw err;
        // Replaced by a hot rescale after its last checkpoint: nothing after that barrier was produced,
        // its operators hand nothing on (no end of input: a window must not fire), its channels end.
        this.setup.writer.end();
        this.state = 'RETIRED';
        return;
      }
      this.setup.onPhase?.(SubtaskPhase.FINISHING);
      for (const op of operators) await this.bounded(op.finish());
      this.setup.writer.end();
      this.state = 'FINISHED';
      this.reportFinal();
    } catch (err) {
      this.state = this.setup.signal.aborted ? 'CANCELED' : 'FAILED';
      throw err;
    } finally {
      this.setup.time.close();
      const closing = await Promise.allSettled(operators.map((op) => op.close()));
      const failedClose = closing.find((r) => r.status === 'rejected');
      if (failedClose && this.state === 'FINISHED') throw failedClose.reason;
    }
  }

  /**
   * Take a checkpoint: a source injects a barrier after its current batch; a task that has finished
   * reports its final state at once (its output is complete). Tasks with inputs checkpoint when their
   * barriers have aligned.
   */
  triggerCheckpoint(checkpointId: number, unaligned = false): void {
    this.requested.add(checkpointId);
    if (this.state === 'FINISHED') this.reportFinal();
    else if (this.loop instanceof SourceLoop) {
      this.loop.trigger(checkpointId, unaligned);
      this.wakeWaiting?.();
    }
  }

  /**
   * Aligned checkpoint `checkpointId` is past its aligned timeout (adaptive alignment, design record
   * 023): its barriers overtake from here. Its barriers waiting for credit go ahead of what they wait
   * behind; a source's barrier not yet sent goes unaligned; a task with inputs that has not taken it
   * takes it at its next turn, unaligned, whatever its alignment has got so far.
   */
  convertCheckpoint(checkpointId: number): void {
    if (this.state !== 'RUNNING') return;
    this.setup.writer.convertBarrier(checkpointId);
    if (!this.taken.has(checkpointId)) this.loop.convert(checkpointId);
  }

  /**
   * A finished subtask's part in checkpoints it never saw a barrier for (its inputs ended first): its
   * final state, which is consistent because its output is complete.
   */
  private reportFinal(): void {
    for (const id of this.requested) {
      if (this.taken.has(id)) continue;
      this.taken.add(id);
      this.snapshot(id);
    }
  }

  /** The checkpoint completed everywhere: operators run their second commit phase, in order. */
  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    this.setup.onPhase?.(SubtaskPhase.COMMITTING);
    for (const op of this.setup.operators) await op.notifyCheckpointComplete(checkpointId);
  }

  /** The checkpoint failed somewhere: an alignment of it stops (releasing what it held), and operators waiting on it learn why. */
  notifyCheckpointAborted(checkpointId: number, reason: string): void {
    this.loop.abort(checkpointId);
    for (const op of this.setup.operators) op.notifyCheckpointAborted(checkpointId, reason);
  }

  /**
   * Capture every operator's state and the source position now; report the snapshot once the parts
   * that encode asynchronously (keyed state) are done, while records flow on.
   */
  private snapshot(checkpointId: number, o: BarrierOptions = {}): void {
    this.setup.onPhase?.(SubtaskPhase.SNAPSHOTTING);
    const parts = this.setup.operators.map((op) => op.snapshotState());
    const source = this.loop instanceof SourceLoop ? this.loop.position() : undefined;
    const commits = this.setup.operators.some((op) => op.holdsCommits);
    const capture = o.capture;
    const barrierAt = o.barrierAt ?? this.setup.now();
    const report = (operators: unknown[]): void => {
      if (capture?.cancelled) return;
      const snap: SubtaskSnapshot = { operators };
      if (source !== undefined) snap.source = source;
      if (capture && capture.batches.length > 0) snap.inflight = capture.batches;
      this.setup.onSnapshot?.(checkpointId, snap, {
        alignmentMs: o.alignmentMs ?? 0,
        commits,
        unaligned: o.unaligned === true || capture !== undefined,
        inflightBytes: capture?.bytes ?? 0,
        barrierAt,
      });
    };
    if (!capture && !parts.some((p) => p instanceof Promise)) {
      report(parts);
      return;
    }
    Promise.all([Promise.all(parts), capture?.whenComplete()]).then(
      ([operators]) => report(operators),
      (err: unknown) => this.setup.onSnapshotFailed?.(checkpointId, err),
    );
  }

  /**
   * Pre-commit, snapshot, then send the barrier on, behind every record this subtask has emitted (an
   * unaligned one overtakes them on the way).
   */
  private async checkpoint(checkpointId: number, o: BarrierOptions = {}): Promise<void> {
    this.taken.add(checkpointId);
    const barrierAt = this.setup.now() - (o.alignmentMs ?? 0);
    this.setup.writer.flush();
    for (const op of this.setup.operators) {
      const p = op.prepareSnapshot(checkpointId);
      if (p) await this.bounded(p);
    }
    this.snapshot(checkpointId, { ...o, barrierAt });
    this.setup.writer.emitBarrier(checkpointId, o.unaligned === true || o.capture !== undefined);
    // A hot rescale's cutover checkpoint: wait here, between batches, while the rescale rewires.
    const gate = this.cutover.passed(checkpointId);
    if (gate && (await this.bounded(gate)) === 'retire') throw new Retired();
  }

  /** A hot rescale's new input channels (their operator inputs), numbered after the existing ones; only at the gate. */
  addInputChannels(inputs: readonly number[]): void {
    if (!(this.loop instanceof InputLoop) || !this.cutover.holding)
      throw new Error(`subtask ${this.id} can take new input channels only at a hot rescale's gate`);
    this.loop.addChannels(inputs);
  }

  /**
   * The task is about to wait (for input, room or user work) or yield: partly filled batches and owed
   * watermarks leave now, since nothing of this task's runs until it resumes (design record 004).
   */
  private beforeWait(): void {
    // What an operator holds only to send fewer records (a processing-time pre-aggregation) goes first.
    // An optional method, not one of StreamOperator's: its declarations are part of the SDK fingerprint.
    for (const op of this.setup.operators) (op as { beforeWait?: () => void }).beforeWait?.();
    this.setup.writer.flushPartial();
  }

  /** Await user or connector work, but stop waiting when the job is cancelled. */
  private bounded<T>(value: T | Promise<T>): T | Promise<T> {
    if (!(value instanceof Promise)) return value;
    this.beforeWait();
    return abortable(value, this.setup.signal);
  }

  /**
   * After each batch: let chained operators flush, wait for room, yield. Partly filled batches leave
   * only before the task waits or yields (beforeWait): until then they fill.
   */
  private async afterBatch(): Promise<void> {
    const { operators, writer, signal } = this.setup;
    const cancelled = abortFlag(this.setup);
    for (const op of operators) {
      const p = op.endBatch();
      if (p !== undefined) await this.bounded(p);
    }
    writer.batchEnded();
    if (writer.mustWait) {
      this.backpressure.begin();
      try {
        await this.awaitRoom();
      } finally {
        this.backpressure.end();
      }
    }
    if (cancelled.aborted) throw signal.reason;
    const now = this.setup.now();
    if (now - this.lastYield >= YIELD_INTERVAL_MS) {
      this.beforeWait();
      await yieldToEventLoop();
      this.lastYield = threadGaveWayAt = this.setup.now();
      if (cancelled.aborted) throw signal.reason;
    } else if (this.setup.input === undefined && now - threadGaveWayAt >= GIVE_WAY_INTERVAL_MS) {
      threadGaveWayAt = now;
      await yieldToEventLoop();
      if (cancelled.aborted) throw signal.reason;
    }
  }

  /**
   * Wait for room downstream. Barriers that need none go on meanwhile, behind what this task sent: a
   * source's (its position is where it stopped) and an unaligned one at a task with inputs (it overtakes
   * the queue anyway). Otherwise a backpressured task would hold them until its consumer took a batch,
   * at a slow stage seconds of work.
   */
  private async awaitRoom(): Promise<void> {
    const { writer } = this.setup;
    for (;;) {
      await this.loop.takeBarriers();
      if (!writer.mustWait) return;
      if (this.loop.barrierWaiting) continue;
      // Asked afresh after each barrier: a hot rescale's barrier may have retargeted the writer.
      if (await this.wakeable(writer.awaitCapacity().then(() => true))) return;
    }
  }

  /** `p`, or undefined once a barrier wakes the wait (wakeWaiting). */
  private async wakeable<T>(p: Promise<T>): Promise<T | undefined> {
    p.catch(() => undefined);
    const woken = new Promise<undefined>((resolve) => (this.wakeWaiting = () => resolve(undefined)));
    try {
      return await this.bounded(Promise.race([p, woken]));
    } finally {
      this.wakeWaiting = undefined;
    }
  }
}
