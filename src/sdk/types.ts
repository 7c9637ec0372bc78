/** Types a job author writes against. */

/** Receives the records an operator emits. */
export interface Collector<T> {
  collect(value: T): void;
}

/** An event-time window: `[start, end)` in epoch milliseconds. */
export interface TimeWindow {
  readonly start: number;
  readonly end: number;
}

export type KeySelector<T, K> = (value: T) => K;

/** What `open()` of a rich function sees. */
export interface RuntimeContext {
  readonly operatorName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly params: Readonly<Record<string, string>>;
}

export interface ValueState<T> {
  value(): T | undefined;
  update(value: T): void;
  clear(): void;
}

export interface MapState<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  has(key: K): boolean;
  remove(key: K): void;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  entries(): IterableIterator<[K, V]>;
  size(): number;
  isEmpty(): boolean;
  clear(): void;
}

export interface ListState<T> {
  get(): T[];
  add(value: T): void;
  addAll(values: Iterable<T>): void;
  update(values: T[]): void;
  clear(): void;
}

/**
 * How long a state's values live, in processing time (Flink's StateTtlConfig). An expired value is
 * never returned: it reads as absent and is removed when it is met, on access or by the cleanup that
 * runs a few entries further with every access. A map's entries and a list's elements expire one by one.
 */
export interface StateTtlConfig {
  /** How long a value lives after it was written (or read too, with `OnReadAndWrite`), in ms. */
  ttlMs: number;
  /** What renews a value's life. @default 'OnCreateAndWrite' */
  updateType?: 'OnCreateAndWrite' | 'OnReadAndWrite';
  /** Keys of this state checked for expired values on each access (Flink's cleanupIncrementally). @default 5 */
  cleanupSize?: number;
}

/** What a state is declared with, besides its name. */
export interface StateOptions {
  /** Expire its values (see StateTtlConfig). A state checkpointed without a TTL cannot gain one, nor lose it. */
  ttl?: StateTtlConfig;
}

/** Keyed state scoped to the current key. Handles are cheap; fetch them per call or once in open(). */
export interface KeyedStateStore {
  value<T>(name: string, options?: StateOptions): ValueState<T>;
  map<K, V>(name: string, options?: StateOptions): MapState<K, V>;
  list<T>(name: string, options?: StateOptions): ListState<T>;
}

export interface TimerService {
  /** Fire `onTimer` when the watermark passes `timestampMs`. One timer per key and timestamp. */
  registerEventTime(timestampMs: number): void;
  /** Fire `onTimer` when the wall clock reaches `timestampMs`. */
  registerProcessingTime(timestampMs: number): void;
  deleteEventTime(timestampMs: number): void;
  deleteProcessingTime(timestampMs: number): void;
  currentWatermark(): number;
  currentProcessingTime(): number;
}

/**
 * The context of a keyed function. The object is reused between calls (no allocation per record):
 * read what you need during the call, do not keep it.
 */
export interface KeyedContext<K> {
  readonly key: K;
  /** The record's (or firing timer's) event timestamp, if it has one. */
  readonly timestamp: number | undefined;
  readonly state: KeyedStateStore;
  readonly timers: TimerService;
  readonly timeDomain?: 'event' | 'processing';
}

export interface KeyedProcessFunction<T, K, R> {
  open?(ctx: RuntimeContext): void | Promise<void>;
  processElement(value: T, ctx: KeyedContext<K>, out: Collector<R>): void;
  onTimer?(timestampMs: number, ctx: KeyedContext<K>, out: Collector<R>): void;
  close?(): void | Promise<void>;
}

export interface ProcessContext {
  readonly timestamp: number | undefined;
  readonly subtaskIndex: number;
  currentWatermark(): number;
  currentProcessingTime(): number;
}

export interface ProcessFunction<T, R> {
  open?(ctx: RuntimeContext): void | Promise<void>;
  processElement(value: T, ctx: ProcessContext, out: Collector<R>): void;
  close?(): void | Promise<void>;
}

export interface KeyedCoProcessFunction<A, B, K, R> {
  open?(ctx: RuntimeContext): void | Promise<void>;
  processElement1(value: A, ctx: KeyedContext<K>, out: Collector<R>): void;
  processElement2(value: B, ctx: KeyedContext<K>, out: Collector<R>): void;
  onTimer?(timestampMs: number, ctx: KeyedContext<K>, out: Collector<R>): void;
  close?(): void | Promise<void>;
}

export interface CoProcessFunction<A, B, R> {
  open?(ctx: RuntimeContext): void | Promise<void>;
  processElement1(value: A, ctx: ProcessContext, out: Collector<R>): void;
  processElement2(value: B, ctx: ProcessContext, out: Collector<R>): void;
  close?(): void | Promise<void>;
}

/** An incremental window aggregate (Flink's AggregateFunction). `merge` is required for session windows. */
export interface AggregateFunction<T, ACC, R, K = unknown> {
  create(): ACC;
  add(value: T, accumulator: ACC): ACC;
  result(accumulator: ACC, key: K, window: TimeWindow): R;
  merge?(a: ACC, b: ACC): ACC;
}

export interface ProcessWindowFunction<T, K, R> {
  process(key: K, window: TimeWindow, elements: T[], out: Collector<R>): void;
}

export interface WindowCount<K> {
  key: K;
  start: number;
  end: number;
  count: number;
}

export interface KeyedCount<K> {
  key: K;
  count: number;
}

export interface IntervalJoinFunction<A, B, K, R> {
  processElement(
    left: A,
    right: B,
    ctx: { key: K; leftTimestamp: number; rightTimestamp: number },
    out: Collector<R>,
  ): void;
}

export interface WatermarkOptions {
  /** How late (in ms) a record may arrive relative to the highest timestamp seen. @default 0 */
  maxOutOfOrdernessMs?: number;
  /** Mark this input idle after this long without records, so it does not hold back watermarks. */
  idleTimeoutMs?: number;
}

export interface WindowOptions {
  /** @default 'event' */
  time?: 'event' | 'processing';
  /**
   * Event-time windows: keep each window (a session too) this long after it fires. A record for it that
   * arrives in that time is added (a session merges it) and the window fires again for its key, with
   * the updated result; later ones are dropped, or sent to `lateData()` after `sideOutputLateData()`. @default 0
   */
  allowedLatenessMs?: number;
}
