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
  /**
   * How far behind its input it is: records the external system holds that it has not emitted yet (a
   * Kafka reader: each partition's end minus its position). The autoscaler scales out on lag that does
   * not shrink. Absent: it cannot tell.
   */
  lag?(): number;
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
  /**
   * After a restore: delete what was prepared or written after the restored checkpoint by each subtask
   * `scope.subtasks` names (subtask indexes of the layout the checkpoint was taken at: this one's own at
   * the same parallelism; after a rescale, every earlier subtask this one takes over, see RecoverScope).
   */
  recover?(committed: readonly unknown[], scope: RecoverScope): void | Promise<void>;
}

/**
 * Whose leftovers a sink subtask clears on restore. At the same parallelism, itself. Restored at another
 * parallelism p', subtask s takes over every earlier subtask i with i mod p' = s (their committables
 * come with them), and none when s is past the earlier parallelism.
 */
export interface RecoverScope {
  readonly subtasks: readonly number[];
  /** The parallelism the restored checkpoint was taken at. */
  readonly parallelism: number;
}

/** What a connector's `check()` is given: its operator's name and when to give up. */
export interface ConnectorCheckContext {
  readonly operatorName: string;
  /** Aborted when the check's time (a few seconds) is up: connect and ask within it. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

export interface SourceFactory<T, O> {
  /** Check options at plan time; throw an error that names the option and the fix. */
  validate?(options: unknown): O;
  /**
   * Before the job deploys: check what can be checked of the external system (it answers, the topic,
   * table or stream is there, the credentials are accepted), within `ctx.signal`. Throw a
   * ConnectorError naming the address and the option to fix.
   */
  check?(options: O, ctx: ConnectorCheckContext): Promise<void>;
  createReader(options: O, ctx: SourceContext): SourceReader<T> | Promise<SourceReader<T>>;
  /**
   * A restore at another parallelism: from the positions of every earlier subtask (by index; undefined
   * where one had none), the position of each of `parallelism` new subtasks, so that together they read
   * exactly what the earlier ones had not. Without it, a source cannot change parallelism on restore.
   */
  rescale?(positions: readonly unknown[], parallelism: number, options: O): unknown[] | Promise<unknown[]>;
}

export interface SinkFactory<T, O> {
  validate?(options: unknown): O;
  /** As SourceFactory.check: the external system answers and has what the sink writes to. */
  check?(options: O, ctx: ConnectorCheckContext): Promise<void>;
  createWriter(options: O, ctx: SinkContext): SinkWriter<T> | Promise<SinkWriter<T>>;
  /**
   * The sink may be restored at another parallelism: its recover() clears what every subtask of
   * `scope.subtasks` left, or it keeps nothing between checkpoints (no preCommit).
   */
  readonly rescalable?: boolean;
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
