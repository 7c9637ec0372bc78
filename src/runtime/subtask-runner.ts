/**
 * SubtaskRunner: runs one parallel instance of a task (a chain of operators). A source task pulls
 * batches from its reader; other tasks take batches from their InputQueue. Each batch is pushed through
 * the chain by direct calls; between batches the task waits for room downstream (backpressure) and
 * yields to the event loop now and then, so timers and sockets are never starved.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { TaskSpec } from '../plan/index.js';
import type { SourceOutput, SourceReader } from '../sdk/index.js';
import { abortable } from '../util/index.js';
import { CutoverGate } from './cutover-gate.js';
import { markFatal } from '../errors.js';
import {
  BARRIER,
  BATCH,
  END,
  MAX_WATERMARK,
  NO_TIMESTAMP,
  STATUS,
  WATERMARK,
  type BarrierElement,
  type RecordBatch,
} from './elements.js';
import type { StreamOperator } from './operator.js';
import { isRescaled, restoreRescaled, type RestoreSnapshot } from './rescale.js';
import { SinkOperator } from './operators/basic.js';
import type { InputQueue } from './queue.js';
import { BarrierAligner, type AlignerEvent } from './aligner.js';
import type { ProcessingTimeService } from './timers.js';
import type { RecordWriter } from './writer.js';
import { WaitClock } from './wait-clock.js';
import { abortFlag } from './abort-flag.js';
import { InputWatermarks } from './input-watermarks.js';
import type { InflightBatch, InflightCapture } from './inflight.js';
import { UnalignedInput } from './unaligned-input.js';
import { replayInflight } from './rescale.js';
import { SubtaskPhase, type SubtaskPhaseCode } from './phase.js';
import { Debloater, nextReadSize } from './debloat.js';

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

/** How a checkpoint is taken here: its alignment's length, or unaligned (with the records in flight, at a task with inputs). */
interface BarrierOptions {
  alignmentMs?: number;
  /** When the first barrier was taken (the subtask's clock). @default now */
  barrierAt?: number;
  unaligned?: boolean;
  capture?: InflightCapture;
}

/** Thrown out of a retiring subtask's loop: it ends quietly, its outputs closed, its operators not finished. */
class Retired extends Error {}

export class SubtaskRunner {
  state: SubtaskState = 'CREATED';
  recordsIn = 0;
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
  /** Checkpoints a source must inject barriers for, after its current batch. */
  private readonly pendingBarriers: { id: number; unaligned: boolean }[] = [];
  /** A task with inputs: its unaligned checkpoints. */
  private unalignedInput: UnalignedInput | undefined;
  /** Checkpoints asked of this subtask, and those it has taken its part in. */
  private readonly requested = new Set<number>();
  private readonly taken = new Set<number>();
  private reader: SourceReader<unknown> | undefined;
  /**
   * Wakes a wait that barriers may interrupt: a source's for its final checkpoint id or for room
   * downstream when a barrier is asked of it, an input task's for room when an unaligned barrier comes.
   */
  private wakeWaiting: (() => void) | undefined;
  /** Records a slice of a batch may hold (processBatch): as many as take about SOURCE_BATCH_TARGET_MS. */
  private sliceSize = Number.MAX_SAFE_INTEGER;
  /** The batch being processed in slices, and where its unprocessed rest begins. */
  private unprocessedRest: { batch: RecordBatch; from: number } | undefined;
  /** Restored in-flight records not yet replayed: ahead of everything queued, on every channel. */
  private replaying: RecordBatch[] = [];
  /** A task with inputs: its barrier alignment. */
  private aligner: BarrierAligner | undefined;
  /** A task with inputs: per channel, which operator input it feeds; the channels not ended; event time. */
  private channels: { inputs: number[]; ended: boolean[]; open: number; time: InputWatermarks } | undefined;
  /** A hot rescale's gate: armed, the subtask waits at it after that checkpoint's barrier. */
  readonly cutover = new CutoverGate();

  constructor(readonly setup: SubtaskSetup) {
    this.backpressure = new WaitClock(setup.now);
    this.idle = new WaitClock(setup.now);
    this.createdAt = setup.now();
  }

  /** Records handed downstream, or for a task that ends in a sink, records the sink wrote. */
  get recordsOut(): number {
    const tail = this.setup.operators[this.setup.operators.length - 1];
    return tail instanceof SinkOperator ? tail.recordsIn : this.setup.writer.recordsOut;
  }

  /** A source's lag behind its input (SourceReader.lag), 0 when it cannot tell or is no source. */
  get lag(): number {
    return this.reader?.lag?.() ?? 0;
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
      // A failure while starting (open, restore) would recur on every restart: it is fatal, unless a
      // connector says the system it talks to was unreachable (that may pass).
      this.setup.onPhase?.(SubtaskPhase.STARTING);
      try {
        for (let i = operators.length - 1; i >= 0; i--) await this.bounded(operators[i]!.open());
        const restore = this.setup.restore;
        if (restore) {
          if (isRescaled(restore)) restoreRescaled(operators, restore, this.setup.index, this.setup.task.parallelism);
          else operators.forEach((op, i) => op.restoreState(restore.operators[i]));
          for (const op of operators) await this.bounded(op.afterRestore());
        }
      } catch (err) {
        throw this.setup.signal.aborted ? err : markFatal(err);
      }
      try {
        if (this.setup.createReader) await this.runSource();
        else await this.runInput();
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
    else if (this.setup.createReader) {
      this.pendingBarriers.push({ id: checkpointId, unaligned });
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
    if (this.taken.has(checkpointId)) return;
    if (!this.setup.createReader) this.unalignedInput?.convert(checkpointId);
    else for (const b of this.pendingBarriers) if (b.id === checkpointId) b.unaligned = true;
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
    this.aligner?.abort(checkpointId);
    this.unalignedInput?.abort(checkpointId);
    for (const op of this.setup.operators) op.notifyCheckpointAborted(checkpointId, reason);
  }

  /**
   * Capture every operator's state and the source position now; report the snapshot once the parts
   * that encode asynchronously (keyed state) are done, while records flow on.
   */
  private snapshot(checkpointId: number, o: BarrierOptions = {}): void {
    this.setup.onPhase?.(SubtaskPhase.SNAPSHOTTING);
    const parts = this.setup.operators.map((op) => op.snapshotState());
    const source = this.reader?.snapshot?.();
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
    const ch = this.channels;
    if (!ch || !this.cutover.holding)
      throw new Error(`subtask ${this.id} can take new input channels only at a hot rescale's gate`);
    ch.inputs.push(...inputs);
    for (let i = 0; i < inputs.length; i++) ch.ended.push(false);
    ch.time.addChannels(inputs.length);
    ch.open += inputs.length;
    this.aligner!.addChannels(inputs.length);
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
    const { writer, input } = this.setup;
    for (;;) {
      if (input === undefined) await this.injectPendingBarriers();
      else await this.takeUnalignedBarriers(input.queue);
      if (!writer.mustWait) return;
      // Asked afresh after each barrier: a hot rescale's barrier may have retargeted the writer.
      const room = writer.awaitCapacity().then(() => true);
      room.catch(() => undefined);
      const woken = new Promise<boolean>((resolve) => (this.wakeWaiting = () => resolve(false)));
      try {
        if (this.pendingBarriers.length > 0 || input?.queue.hasPriority) continue;
        if (await this.bounded(Promise.race([room, woken]))) return;
      } finally {
        this.wakeWaiting = undefined;
      }
    }
  }

  /** Take the unaligned barriers queued. */
  private async takeUnalignedBarriers(queue: InputQueue): Promise<void> {
    for (let e = queue.pollPriority(); e !== undefined; e = queue.pollPriority()) await this.takeUnaligned(e);
  }

  /** An unaligned barrier, never held by an alignment: the first of its checkpoint starts the capture and snapshot. */
  private async takeUnaligned(e: BarrierElement): Promise<void> {
    const rest = this.unprocessedRest;
    // The rest of a batch under way came before what is left to replay, and that before anything the
    // queue or an alignment holds.
    const unprocessed = [
      ...(rest
        ? [
            {
              ...rest.batch,
              values: rest.batch.values.slice(rest.from),
              timestamps: rest.batch.timestamps.slice(rest.from),
            },
          ]
        : []),
      ...this.replaying,
      ...this.aligner!.unprocessed(),
    ];
    // An alignment of it under way (adaptive alignment converted it): its channels owe nothing more,
    // and what it held comes after the snapshot.
    const aligned = this.aligner!.delivered(e.checkpointId);
    const capture = this.unalignedInput!.begin(e, unprocessed, aligned?.channels ?? []);
    if (!capture) return;
    this.aligner!.abort(e.checkpointId);
    await this.checkpoint(e.checkpointId, { capture, alignmentMs: aligned?.alignmentMs ?? 0 });
  }

  private async runSource(): Promise<void> {
    const head = this.setup.operators[0]!;
    const reader = await this.bounded(this.setup.createReader!());
    this.reader = reader;
    const restore = this.setup.restore;
    const position =
      restore && isRescaled(restore) ? await this.bounded(this.setup.rescaledPosition!()) : restore?.source;
    if (position !== undefined) await this.bounded(reader.restore?.(position));
    const next = head.out;
    let emittedWatermark = NO_TIMESTAMP;
    let sourceIdle = false;
    const out: SourceOutput<unknown> = {
      collect: (v) => {
        this.recordsIn++;
        next.collect(v, NO_TIMESTAMP);
      },
      collectWithTimestamp: (v, ts) => {
        this.recordsIn++;
        next.collect(v, ts);
      },
      emitWatermark: (wm) => {
        if (wm > emittedWatermark) head.processWatermark((emittedWatermark = wm));
      },
      markIdle: (idle) => {
        if (idle !== sourceIdle) head.processStatus((sourceIdle = idle));
      },
    };
    const { batchSize, now } = this.setup;
    let readSize = batchSize;
    try {
      for (;;) {
        if (this.pendingBarriers.length > 0) await this.injectPendingBarriers();
        this.setup.onPhase?.(SubtaskPhase.READING);
        const [readAt, idleAt, recordsAt] = [now(), this.idle.totalMs, this.recordsIn];
        let status = reader.read(out, Math.min(readSize, this.setup.writer.debloatedRead));
        if (typeof status !== 'string') {
          this.idle.begin();
          try {
            status = await this.bounded(status);
          } finally {
            this.idle.end();
          }
        }
        const busyMs = now() - readAt - (this.idle.totalMs - idleAt);
        readSize = nextReadSize(readSize, batchSize, this.recordsIn - recordsAt, busyMs);
        await this.afterBatch();
        if (status === 'END') break;
      }
      // A checkpoint asked for during the last batch still gets its barrier, before the end.
      await this.injectPendingBarriers();
      if (this.setup.finalCheckpoint) {
        // Event time ends first, so every window fires ahead of the final barrier and is in its commit.
        head.processWatermark(MAX_WATERMARK);
        await this.checkpoint(await this.finalCheckpointId());
        return;
      }
    } finally {
      await this.bounded(reader.close?.());
    }
    head.processWatermark(MAX_WATERMARK);
  }

  /** A source's barriers for the checkpoints asked of it since its last batch, in order. */
  private async injectPendingBarriers(): Promise<void> {
    while (this.pendingBarriers.length > 0) {
      const { id, unaligned } = this.pendingBarriers.shift()!;
      await this.checkpoint(id, { unaligned });
    }
  }

  /** Ask for the final checkpoint; until its id comes, keep sending the barriers of periodic ones. */
  private async finalCheckpointId(): Promise<number> {
    const assigned = this.setup.finalCheckpoint!();
    try {
      for (;;) {
        await this.injectPendingBarriers();
        const woken = new Promise<undefined>((resolve) => (this.wakeWaiting = () => resolve(undefined)));
        const id = await this.bounded(Promise.race([assigned, woken]));
        if (id !== undefined) return id;
      }
    } finally {
      this.wakeWaiting = undefined;
    }
  }

  /** Records `from` to `to` for the head operator's input `input` (0: its first, else its second). */
  private processRecords(
    input: number,
    values: readonly unknown[],
    timestamps: readonly number[],
    from = 0,
    to = values.length,
  ): void {
    const head = this.setup.operators[0]!;
    this.recordsIn += to - from;
    if (input === 0) for (let i = from; i < to; i++) head.processElement(values[i], timestamps[i]!);
    else for (let i = from; i < to; i++) head.processElement2(values[i], timestamps[i]!);
  }

  /**
   * A batch from a channel, in slices of what the task gets through in about SOURCE_BATCH_TARGET_MS
   * when its records are slow; between slices it gives way (afterBatch), so an unaligned barrier that
   * comes meanwhile overtakes the rest of the batch (written with the checkpoint as in flight), and the
   * thread's other tasks run. A fast task's batch is one slice: two clock reads a batch.
   */
  private async processBatch(input: number, e: RecordBatch): Promise<void> {
    const { values, timestamps } = e;
    const n = values.length;
    for (let from = 0; from < n;) {
      const to = Math.min(n, from + this.sliceSize);
      const startedAt = this.setup.now();
      this.processRecords(input, values, timestamps, from, to);
      this.sliceSize = nextReadSize(this.sliceSize, Number.MAX_SAFE_INTEGER, to - from, this.setup.now() - startedAt);
      from = to;
      if (from === n) return;
      this.unprocessedRest = { batch: e, from };
      try {
        await this.afterBatch();
        await this.takeUnalignedBarriers(this.setup.input!.queue);
      } finally {
        this.unprocessedRest = undefined;
      }
    }
  }

  private async runInput(): Promise<void> {
    const { queue, channelInputs } = this.setup.input!;
    const head = this.setup.operators[0]!;
    // Growable: a hot rescale adds channels while the subtask waits at its gate.
    const ch = (this.channels = {
      inputs: [...channelInputs],
      ended: channelInputs.map(() => false),
      open: channelInputs.length,
      time: new InputWatermarks(channelInputs.length, head),
    });
    const { inputs, ended, time } = ch;

    // Aligned checkpoints (aligner.ts): a channel that has delivered the barrier is held back until
    // every channel still open has. A held batch's credit goes back only when it is processed, so a
    // remote channel that is held stops sending once its credits are spent; a local one stops when a
    // queue's worth of its batches is held (InputQueue.channel).
    const aligner = (this.aligner = new BarrierAligner(inputs.length, undefined, (e, held) => {
      if (e.kind !== BATCH) return;
      if (held) queue.hold(e.channel);
      else queue.release(e.channel);
    }));
    const onAlignment = async (ev: AlignerEvent): Promise<void> => {
      if (ev.kind === 'complete') await this.checkpoint(ev.checkpointId, { alignmentMs: ev.alignmentMs });
      else if (ev.kind === 'cancelled') this.setup.onAlignmentCancelled?.(ev.checkpointId, ev.by);
    };
    // Unaligned checkpoints (unaligned-input.ts): the barrier is taken ahead of what is queued.
    this.unalignedInput = new UnalignedInput(queue, { inputs, ended }, (id, by) =>
      this.setup.onAlignmentCancelled?.(id, by),
    );

    // An unaligned barrier that comes while the task waits for room downstream is taken then (awaitRoom).
    queue.onPriority = () => this.wakeWaiting?.();
    const debloatMs = this.setup.debloatTargetMs ?? 0;
    const debloater =
      debloatMs > 0
        ? new Debloater(debloatMs, queue.capacity, this.setup.batchSize, this.setup.now(), this.idle.totalMs)
        : undefined;

    // What was in flight at the checkpoint restored goes through first, as it would have. An unaligned
    // barrier that comes meanwhile overtakes what is left of it (in flight again, for its checkpoint):
    // at a slow stage it is seconds of work, longer than a checkpoint may take.
    const restore = this.setup.restore;
    if (restore) {
      this.replaying = replayInflight(restore, this.setup).map(({ input, values, timestamps }) => {
        // As if it came on a channel feeding its input (the capture of a checkpoint taken meanwhile reads it so).
        const channel = inputs.indexOf(input);
        if (channel < 0) throw new Error(`records in flight were restored for input ${input}, which no channel feeds`);
        return { kind: BATCH, channel, values, timestamps };
      });
      for (let e = this.replaying.shift(); e !== undefined; e = this.replaying.shift()) {
        this.setup.onPhase?.(SubtaskPhase.PROCESSING);
        await this.processBatch(inputs[e.channel]!, e);
        await this.afterBatch();
        await this.takeUnalignedBarriers(queue);
      }
    }

    while (ch.open > 0) {
      // An unaligned barrier goes before what an alignment released, as before what is queued.
      let e = queue.pollPriority() ?? aligner.nextReplayed() ?? queue.poll();
      if (e === undefined) {
        this.beforeWait();
        this.setup.onPhase?.(SubtaskPhase.IDLE);
        this.idle.begin();
        try {
          e = await queue.take();
        } finally {
          this.idle.end();
        }
      }
      // Never held by an alignment: it overtakes, whatever channel it came on.
      if (e.kind === BARRIER && e.unaligned) {
        await this.takeUnaligned(e);
        continue;
      }
      if (aligner.hold(e)) continue;
      switch (e.kind) {
        case BATCH: {
          e.onTaken?.();
          this.setup.onPhase?.(SubtaskPhase.PROCESSING);
          await this.processBatch(inputs[e.channel]!, e);
          if (debloater) {
            debloater.processed(e.values.length);
            queue.batchLimit = debloater.sample(this.setup.now(), this.idle.totalMs);
          }
          await this.afterBatch();
          break;
        }
        case WATERMARK:
          time.watermark(e.channel, e.timestamp);
          await this.afterBatch();
          break;
        case STATUS:
          time.status(e.channel, e.idle);
          await this.afterBatch();
          break;
        case END:
          ch.open--;
          ended[e.channel] = true;
          time.end(e.channel);
          await onAlignment(aligner.onEnd(e.channel));
          await this.afterBatch();
          break;
        case BARRIER:
          await onAlignment(aligner.onBarrier(e.channel, e.checkpointId));
          break;
      }
    }
  }
}
