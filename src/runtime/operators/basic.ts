/** Stateless operators: source head, map, flatMap, filter, process, union, timestamps, sink. */
import { ConnectorError } from '../../errors.js';
import { abortable } from '../../util/index.js';
import type { Collector, ProcessContext, ProcessFunction, RecoverScope, SinkWriter } from '../../sdk/index.js';
import { MAX_WATERMARK, NO_TIMESTAMP } from '../elements.js';
import { StreamOperator } from '../operator.js';
import type { RescaledParts } from '../rescale.js';

type AnyFn = (...args: unknown[]) => unknown;

/** The head of a source task. The task's source loop emits straight into `out`. */
export class SourceOperator extends StreamOperator {
  processElement(value: unknown, timestamp: number): void {
    this.out.collect(value, timestamp);
  }
}

/** Several inputs of one type: records pass through; the task combines the inputs' watermarks. */
export class UnionOperator extends SourceOperator {}

export class MapOperator extends StreamOperator {
  private fn!: AnyFn;
  override open(): void {
    this.fn = this.ctx.fns.fn as AnyFn;
  }
  processElement(value: unknown, timestamp: number): void {
    let r: unknown;
    try {
      r = this.fn(value);
    } catch (err) {
      throw this.userError(err);
    }
    this.out.collect(r, timestamp);
  }
}

export class FilterOperator extends StreamOperator {
  private fn!: AnyFn;
  override open(): void {
    this.fn = this.ctx.fns.fn as AnyFn;
  }
  processElement(value: unknown, timestamp: number): void {
    let keep: unknown;
    try {
      keep = this.fn(value);
    } catch (err) {
      throw this.userError(err);
    }
    if (keep) this.out.collect(value, timestamp);
  }
}

/** A collector that emits with the timestamp of the record being processed. */
export function timestampedCollector(
  op: { out: { collect(v: unknown, ts: number): void } },
  ts: () => number,
): Collector<unknown> {
  return { collect: (v: unknown) => op.out.collect(v, ts()) };
}

export class FlatMapOperator extends StreamOperator {
  private fn!: AnyFn;
  private collector!: Collector<unknown>;
  override open(): void {
    this.fn = this.ctx.fns.fn as AnyFn;
    this.collector = timestampedCollector(this, () => this.currentTimestamp);
  }
  processElement(value: unknown, timestamp: number): void {
    this.currentTimestamp = timestamp;
    let r: unknown;
    try {
      r = this.fn(value, this.collector);
      if (r !== undefined && r !== null) {
        if (typeof (r as Iterable<unknown>)[Symbol.iterator] !== 'function') {
          throw new TypeError(
            `flatMap function returned ${typeof r}; emit through out.collect() or return an iterable`,
          );
        }
        for (const x of r as Iterable<unknown>) this.out.collect(x, timestamp);
      }
    } catch (err) {
      throw this.userError(err);
    }
  }
}

export class ProcessOperator extends StreamOperator {
  private udf!: ProcessFunction<unknown, unknown>;
  private collector!: Collector<unknown>;
  private context!: ProcessContext;

  override async open(): Promise<void> {
    this.udf = this.ctx.fns.udf as ProcessFunction<unknown, unknown>;
    this.collector = timestampedCollector(this, () => this.currentTimestamp);
    this.context = processContext(this, () => this.currentTimestamp);
    await this.openUdf(this.udf);
  }
  processElement(value: unknown, timestamp: number): void {
    this.currentTimestamp = timestamp;
    try {
      this.udf.processElement(value, this.context, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }
  override close(): Promise<void> {
    return this.closeUdf(this.udf);
  }
}

/** The non-keyed context of a process function; one object per operator, read through getters. */
export function processContext(op: StreamOperator, timestamp: () => number): ProcessContext {
  return {
    get timestamp() {
      const ts = timestamp();
      return ts === NO_TIMESTAMP ? undefined : ts;
    },
    subtaskIndex: op.ctx.subtaskIndex,
    currentWatermark: () => op.currentWatermark,
    currentProcessingTime: () => op.ctx.time.now(),
  };
}

/**
 * Assigns event timestamps and emits bounded-out-of-orderness watermarks after each batch. Upstream
 * watermarks are replaced by its own, except the final one that ends the input.
 */
export class AssignTimestampsOperator extends StreamOperator {
  private fn!: (v: unknown) => number;
  private maxOutOfOrderness = 0;
  private maxTimestamp = NO_TIMESTAMP;
  private lastEmitted = NO_TIMESTAMP;
  private idle = false;
  private sawRecord = false;

  override open(): void {
    this.fn = this.ctx.fns.fn as (v: unknown) => number;
    this.maxOutOfOrderness = Number(this.ctx.spec.options.maxOutOfOrdernessMs ?? 0);
    const idleMs = this.ctx.spec.options.idleTimeoutMs;
    if (typeof idleMs === 'number') this.scheduleIdleCheck(idleMs);
  }

  private scheduleIdleCheck(idleMs: number): void {
    this.ctx.time.schedule(this.ctx.time.now() + idleMs, () => {
      if (!this.sawRecord && !this.idle) {
        this.idle = true;
        this.out.emitStatus(true);
      }
      this.sawRecord = false;
      this.scheduleIdleCheck(idleMs);
    });
  }

  processElement(value: unknown, _timestamp: number): void {
    let ts: number;
    try {
      ts = this.fn(value);
    } catch (err) {
      throw this.userError(err);
    }
    if (typeof ts !== 'number' || !Number.isFinite(ts)) {
      throw this.userError(
        new TypeError(
          `timestamp function returned ${String(ts)}; it must return epoch milliseconds as a finite number`,
        ),
      );
    }
    if (ts > this.maxTimestamp) this.maxTimestamp = ts;
    if (this.idle) {
      this.idle = false;
      this.out.emitStatus(false);
    }
    this.sawRecord = true;
    this.out.collect(value, ts);
  }

  override endBatch(): void {
    const wm = this.maxTimestamp - this.maxOutOfOrderness - 1;
    if (wm > this.lastEmitted) {
      this.lastEmitted = wm;
      this.currentWatermark = wm;
      this.out.emitWatermark(wm);
    }
  }

  override processWatermark(watermark: number): void {
    if (watermark === MAX_WATERMARK) super.processWatermark(watermark);
  }

  override snapshotState(): unknown {
    return { maxTimestamp: this.maxTimestamp, lastEmitted: this.lastEmitted };
  }

  override restoreState(state: unknown): void {
    if (state === undefined) return;
    const s = state as { maxTimestamp: number; lastEmitted: number };
    this.maxTimestamp = s.maxTimestamp;
    this.lastEmitted = s.lastEmitted;
    this.currentWatermark = s.lastEmitted;
  }

  /** Rescaled: the least progress of the subtasks taken over, so no record of theirs turns late; none: fresh. */
  override restoreRescaled(parts: RescaledParts): void {
    const taken = parts.assigned.filter((p): p is { maxTimestamp: number; lastEmitted: number } => p !== undefined);
    if (taken.length === 0) return;
    this.restoreState({
      maxTimestamp: Math.min(...taken.map((t) => t.maxTimestamp)),
      lastEmitted: Math.min(...taken.map((t) => t.lastEmitted)),
    });
  }
}

export class SinkOperator extends StreamOperator {
  constructor(private readonly makeWriter: () => SinkWriter<unknown> | Promise<SinkWriter<unknown>>) {
    super();
  }
  private writer!: SinkWriter<unknown>;
  recordsIn = 0;

  override async open(): Promise<void> {
    try {
      this.writer = await this.makeWriter();
    } catch (err) {
      throw err instanceof ConnectorError ? err : this.userError(err);
    }
  }
  processElement(value: unknown, timestamp: number): void {
    this.recordsIn++;
    try {
      this.writer.write(value, timestamp === NO_TIMESTAMP ? undefined : timestamp);
    } catch (err) {
      throw this.userError(err);
    }
  }
  override processWatermark(watermark: number): void {
    this.currentWatermark = watermark;
  }
  override processStatus(): void {}
  override endBatch(): void | Promise<void> {
    return this.writer.flush?.();
  }
  /**
   * Set for a job whose checkpoints are durable: its sources end with a final checkpoint, and what
   * this sink prepared is committed when the coordinator says that checkpoint completed, not here.
   */
  commitThroughFinalCheckpoint = false;
  /** While finish() waits for the final checkpoint's commit. */
  private finalWait: { resolve: () => void; reject: (err: Error) => void } | undefined;

  override async finish(): Promise<void> {
    await this.writer.flush?.();
    if (this.commitThroughFinalCheckpoint && this.prepared.size > 0) {
      await abortable(new Promise<void>((resolve, reject) => (this.finalWait = { resolve, reject })), this.ctx.signal);
    }
    // Without a final checkpoint the run's completion is the commit: what it prepared goes with its tail.
    for (const [id, c] of [...this.prepared]) {
      await this.writer.commit?.(c);
      this.prepared.delete(id);
    }
    await this.writer.finish?.();
  }
  override async close(): Promise<void> {
    await this.writer?.close?.();
  }

  /** Prepared but not yet committed, by checkpoint id. */
  private readonly prepared = new Map<number, unknown>();
  /** Restored: the checkpoint's own committables, to finish on open. */
  private recovered: unknown[] | undefined;
  /** Rescaled: the earlier subtasks whose leftovers this one clears. */
  private recoverScope: RecoverScope | undefined;

  override async prepareSnapshot(checkpointId: number): Promise<void> {
    if (!this.writer.preCommit) return;
    await this.writer.flush?.();
    this.prepared.set(checkpointId, await this.writer.preCommit(checkpointId));
  }

  override snapshotState(): unknown {
    // Everything prepared and not yet known committed: a restore from this checkpoint finishes it.
    return this.prepared.size > 0 ? { committables: [...this.prepared.values()] } : undefined;
  }

  override restoreState(state: unknown): void {
    this.recovered = (state as { committables?: unknown[] } | undefined)?.committables ?? [];
  }

  /** Rescaled: the pending commits of the subtasks taken over, and their leftovers to clear. */
  override restoreRescaled(parts: RescaledParts): void {
    this.recovered = parts.assigned.flatMap((s) => (s as { committables?: unknown[] } | undefined)?.committables ?? []);
    this.recoverScope = { subtasks: parts.assignedIndexes, parallelism: parts.from };
  }

  override get holdsCommits(): boolean {
    return this.prepared.size > 0;
  }

  override async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    for (const [id, c] of [...this.prepared]) {
      if (id > checkpointId) continue;
      await this.writer.commit?.(c);
      this.prepared.delete(id);
    }
    if (this.prepared.size === 0) this.finalWait?.resolve();
  }

  override notifyCheckpointAborted(checkpointId: number, reason: string): void {
    // Waiting at the end means this was the final checkpoint: the tail cannot be committed exactly once.
    if (this.finalWait && this.prepared.has(checkpointId)) {
      this.finalWait.reject(
        new ConnectorError(
          `sink '${this.ctx.spec.name}': the final checkpoint ${checkpointId} was aborted (${reason}); the job restarts from its last completed checkpoint and writes the tail again, once (or fails, when it cannot restart)`,
        ),
      );
    }
  }

  /** After a restore: finish the commits the checkpoint recorded and drop anything newer. */
  override async afterRestore(): Promise<void> {
    if (!this.recovered) return;
    for (const c of this.recovered) await this.writer.commit?.(c);
    await this.writer.recover?.(
      this.recovered,
      this.recoverScope ?? { subtasks: [this.ctx.subtaskIndex], parallelism: this.ctx.parallelism },
    );
    this.recovered = undefined;
  }
}
