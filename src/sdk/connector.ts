/** The connector contract: sources read splits of data, sinks write it. */

export interface SourceContext {
  readonly operatorName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly signal: AbortSignal;
}

export interface SourceOutput<T> {
  collect(value: T): void;
  collectWithTimestamp(value: T, timestampMs: number): void;
  /**
   * Event time has reached `watermarkMs` for this subtask's output (a source that tracks it per split,
   * as Kafka per partition does). Ignored unless it advances.
   */
  emitWatermark(watermarkMs: number): void;
  /** Nothing to read for now (true) or reading again (false): an idle source holds no watermark back. */
  markIdle(idle: boolean): void;
}

/** What a read returned: more data may follow, or this reader has no more. */
export type ReadStatus = 'MORE' | 'END';

export interface SourceReader<T> {
  /** Emit up to `maxRecords` records into `out`. Never emit records after returning 'END'. */
  read(out: SourceOutput<T>, maxRecords: number): ReadStatus | Promise<ReadStatus>;
  close?(): void | Promise<void>;
  /** Its position at a checkpoint (after the last record it emitted), as plain data. */
  snapshot?(): unknown;
  /** Resume from a position snapshot() returned, before the first read. */
  restore?(position: unknown): void | Promise<void>;
}

export interface SinkContext {
  readonly operatorName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
}

export interface SinkWriter<T> {
  write(value: T, timestampMs: number | undefined): void;
  /** Called after each batch; a returned promise applies backpressure until it settles. */
  flush?(): void | Promise<void>;
  /** End of input: make everything written visible. */
  finish?(): void | Promise<void>;
  close?(): void | Promise<void>;
  /**
   * Two-phase commit, first phase, at a checkpoint barrier: make what was written since the last
   * checkpoint durable but not yet visible, and return what commit() needs (plain data, stored in the
   * checkpoint).
   */
  preCommit?(checkpointId: number): unknown | Promise<unknown>;
  /**
   * Second phase, once the checkpoint completed everywhere (or after a restore, with what the checkpoint
   * recorded): make it visible. Must be idempotent.
   */
  commit?(committable: unknown): void | Promise<void>;
  /** After a restore: delete what was prepared or written after the restored checkpoint. */
  recover?(committed: readonly unknown[]): void | Promise<void>;
}

export interface SourceFactory<T, O> {
  /** Check options at plan time; throw an error that names the option and the fix. */
  validate?(options: unknown): O;
  createReader(options: O, ctx: SourceContext): SourceReader<T> | Promise<SourceReader<T>>;
}

export interface SinkFactory<T, O> {
  validate?(options: unknown): O;
  createWriter(options: O, ctx: SinkContext): SinkWriter<T> | Promise<SinkWriter<T>>;
}

/** A connector has a name and a source side, a sink side, or both. */
export interface Connector<S = unknown, K = unknown> {
  readonly name: string;
  /** A source with no `split` runs with parallelism 1 only. */
  readonly parallelSource?: boolean;
  readonly source?: SourceFactory<S, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly sink?: SinkFactory<K, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Identity helper that gives a connector object its type. */
export function defineConnector<S, K>(connector: Connector<S, K>): Connector<S, K> {
  return connector;
}
