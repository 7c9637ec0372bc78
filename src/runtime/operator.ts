/**
 * The operator contract. Operators in a chain call each other directly: an operator's `out` is either
 * the next operator (ChainedOutput) or the task's RecordWriter. Batch processing is synchronous; only
 * `open`, `endBatch`, `finish` and `close` may return promises.
 */
import { StateError, UserCodeError } from '../errors.js';
import type { OperatorSpec } from '../plan/index.js';
import type { OperatorFunctions, RuntimeContext } from '../sdk/index.js';
import type { DiskStateOptions } from '../state/index.js';
import { NO_TIMESTAMP } from './elements.js';
import type { RescaledParts } from './rescale.js';
import type { ProcessingTimeService } from './timers.js';

export interface Output {
  collect(value: unknown, timestamp: number): void;
  /** A record for a side output (a window's late records); only a task's writer has side outputs. */
  collectSide?(output: string, value: unknown, timestamp: number): void;
  emitWatermark(watermark: number): void;
  emitStatus(idle: boolean): void;
}

/** What every operator instance knows about where it runs. */
export interface OperatorContext {
  readonly spec: OperatorSpec;
  readonly fns: OperatorFunctions;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly params: Readonly<Record<string, string>>;
  readonly time: ProcessingTimeService;
  readonly signal: AbortSignal;
  readonly services: RuntimeServices;
  /** Keep keyed user state on disk (the disk state backend); undefined: on the heap. */
  readonly diskState?: DiskStateOptions;
}

/** Services a runtime provides to operators (collect results, standard output). */
export interface RuntimeServices {
  collect(name: string, values: readonly unknown[]): void;
  stdout(text: string): void | Promise<void>;
}

export abstract class StreamOperator {
  out!: Output;
  ctx!: OperatorContext;
  currentWatermark = NO_TIMESTAMP;
  /** The timestamp of the record being processed, for collectors. */
  protected currentTimestamp = NO_TIMESTAMP;

  setup(ctx: OperatorContext, out: Output): void {
    this.ctx = ctx;
    this.out = out;
  }

  get name(): string {
    return this.ctx.spec.name;
  }

  open(): void | Promise<void> {}

  abstract processElement(value: unknown, timestamp: number): void;

  processElement2(_value: unknown, _timestamp: number): void {
    throw new Error(`operator '${this.name}' has one input`);
  }

  processWatermark(watermark: number): void {
    this.currentWatermark = watermark;
    this.out.emitWatermark(watermark);
  }

  processStatus(idle: boolean): void {
    this.out.emitStatus(idle);
  }

  /** After each input batch. A returned promise holds the task until it settles (sinks flushing). */
  endBatch(): void | Promise<void> {}

  /** End of input: emit what is pending. The watermark has already reached +Infinity. */
  finish(): void | Promise<void> {}

  close(): void | Promise<void> {}

  /**
   * At a checkpoint barrier, before snapshotState(): the first phase of a two-phase commit (a sink
   * makes what it wrote durable but not yet visible). Records wait until it settles.
   */
  prepareSnapshot(_checkpointId: number): void | Promise<void> {}

  /** The checkpoint completed everywhere: the second phase (a sink makes its output visible). */
  notifyCheckpointComplete(_checkpointId: number): void | Promise<void> {}

  /** It holds what a completed checkpoint makes visible (a two-phase-commit sink with something prepared). */
  get holdsCommits(): boolean {
    return false;
  }

  /** The checkpoint failed somewhere. What was prepared for it stays prepared (the next one commits it). */
  notifyCheckpointAborted(_checkpointId: number, _reason: string): void {}

  /**
   * This operator's state at a checkpoint barrier, or undefined when it has none: a value nothing
   * changes afterwards (a copy), or a promise of one whose capture happened in this call (records
   * flow again as soon as it returns).
   */
  snapshotState(): unknown {
    return undefined;
  }

  /**
   * Restore what snapshotState returned; called after open(), before any record. A large state is
   * restored in slices (a promise), so the thread's liveness tick keeps moving.
   */
  restoreState(_state: unknown): void | Promise<void> {}

  /**
   * Restore at another parallelism, from the earlier subtasks' parts (see runtime/rescale.ts). An
   * operator that keeps no state has nothing to take; one that keeps state it cannot redistribute says so
   * (the restore gate refuses such a rescale before it starts, so this is a guard).
   */
  restoreRescaled(parts: RescaledParts): void | Promise<void> {
    if ([...parts.overlapping, ...parts.assigned].some((p) => p !== undefined)) {
      throw new StateError(
        `operator '${this.ctx.spec.name}' (${this.ctx.spec.type}) keeps state that cannot be restored at another parallelism`,
      );
    }
  }

  /** After restoreState(), before any record: finish what the checkpoint left to do (a sink's commits). */
  afterRestore(): void | Promise<void> {}

  protected userError(err: unknown): UserCodeError {
    if (err instanceof UserCodeError) return err;
    return new UserCodeError(this.ctx.spec, this.ctx.subtaskIndex, this.ctx.parallelism, err);
  }

  protected runtimeContext(): RuntimeContext {
    return {
      operatorName: this.name,
      subtaskIndex: this.ctx.subtaskIndex,
      parallelism: this.ctx.parallelism,
      params: this.ctx.params,
    };
  }

  /** Call a user function's optional open(), attributing a throw to this operator. */
  protected async openUdf(udf: { open?(ctx: RuntimeContext): void | Promise<void> } | undefined): Promise<void> {
    if (typeof udf?.open !== 'function') return;
    try {
      await udf.open(this.runtimeContext());
    } catch (err) {
      throw this.userError(err);
    }
  }

  protected async closeUdf(udf: { close?(): void | Promise<void> } | undefined): Promise<void> {
    if (typeof udf?.close !== 'function') return;
    try {
      await udf.close();
    } catch (err) {
      throw this.userError(err);
    }
  }
}

/** Connects one operator to the next in a chain: a direct call, no buffering. */
export class ChainedOutput implements Output {
  constructor(private readonly next: StreamOperator) {}
  collect(value: unknown, timestamp: number): void {
    this.next.processElement(value, timestamp);
  }
  emitWatermark(watermark: number): void {
    this.next.processWatermark(watermark);
  }
  emitStatus(idle: boolean): void {
    this.next.processStatus(idle);
  }
}
