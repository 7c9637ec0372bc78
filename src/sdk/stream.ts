/** The DataStream API: streams are handles on graph nodes; each transform adds an operator and an edge. */
import { InvalidArgumentError } from '../errors.js';
import type { Connector } from './connector.js';
import {
  checkFunction,
  checkMethod,
  checkParallelism,
  type GraphBuilder,
  type OpNode,
  type PendingEdgeKind,
} from './graph.js';
import { checkConnectorOptions, namedConnector } from './named-connectors.js';
import type {
  AggregateFunction,
  CoProcessFunction,
  Collector,
  IntervalJoinFunction,
  KeyedCoProcessFunction,
  KeyedCount,
  KeyedProcessFunction,
  KeySelector,
  ProcessFunction,
  ProcessWindowFunction,
  TimeWindow,
  WatermarkOptions,
  WindowCount,
  WindowOptions,
} from './types.js';
import type { WindowAssigner } from './windows.js';
import { declarationsOf, type KeyedProcessOptions } from './state-declarations.js';

/** Settings shared by every stream handle: they apply to the operator that produced the stream. */
abstract class OperatorHandle {
  constructor(
    protected readonly graph: GraphBuilder,
    /** @internal */ readonly node: OpNode,
  ) {}

  /** Run this operator with `n` parallel subtasks. */
  setParallelism(n: number): this {
    this.node.parallelism = checkParallelism(`operator '${this.node.name}'`, n);
    return this;
  }

  /** A display name for this operator (in progress output, errors and metrics). */
  name(name: string): this {
    if (typeof name !== 'string' || name.length === 0)
      throw new InvalidArgumentError(`name() expects a non-empty string`);
    this.node.name = name;
    return this;
  }

  /** A stable operator id; state is matched to operators by it on restore. Defaults to `_inline_<type>_<n>`. */
  uid(id: string): this {
    if (typeof id !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(id)) {
      throw new InvalidArgumentError(`uid() expects letters, digits, '_', '.' or '-', got '${String(id)}'`);
    }
    if (this.graph.nodes.some((n) => n.id === id && n !== this.node)) {
      throw new InvalidArgumentError(`uid '${id}' is already used by another operator`);
    }
    // An operator not named yet is called by its id.
    if (this.node.name === this.node.id) this.node.name = id;
    this.node.id = id;
    return this;
  }

  /** Begin a new chain at this operator: it does not chain to its predecessor. */
  startNewChain(): this {
    this.node.chaining = 'HEAD';
    return this;
  }

  /** Never chain this operator with its neighbours. */
  disableChaining(): this {
    this.node.chaining = 'NEVER';
    return this;
  }

  /**
   * Put this operator in a slot sharing group of its own name. A slot holds one subtask of each task
   * of a group, so a job needs, per group, as many slots as its widest task; operators that do not say
   * take their inputs' group (all inputs in one group), else 'default'. Operators chain only within a group.
   */
  slotSharingGroup(name: string): this {
    if (typeof name !== 'string' || name.length === 0 || name.length > 128) {
      throw new InvalidArgumentError(
        `slotSharingGroup() expects a name of 1 to 128 characters, got ${JSON.stringify(name)}`,
      );
    }
    this.node.slotSharingGroup = name;
    return this;
  }

  /** @internal */
  get operatorId(): string {
    return this.node.id;
  }
}

export class DataStream<T> extends OperatorHandle {
  /** @internal */
  constructor(
    graph: GraphBuilder,
    node: OpNode,
    /** @internal */ readonly partitioning: PendingEdgeKind = 'AUTO',
    /** @internal the key of a HASH partitioning */ readonly partitionKey?: KeySelector<T, unknown>,
  ) {
    super(graph, node);
  }

  /** @internal adds an operator fed by this stream */
  protected to<R>(node: OpNode, inputIndex: 0 | 1 = 0): DataStream<R> {
    this.feed(node, inputIndex);
    return new DataStream<R>(this.graph, node);
  }

  /** @internal an edge from this stream's operator into `node`, with this stream's partitioning */
  feed(node: OpNode, inputIndex: 0 | 1): void {
    if (this.partitioning === 'HASH') {
      const selectors = (node.fns.keySelectors ??= []);
      selectors[inputIndex] = this.partitionKey as (v: unknown) => unknown;
    }
    this.graph.addEdge(this.node, node, this.partitioning, inputIndex);
  }

  map<R>(fn: (value: T) => R): DataStream<R> {
    checkFunction('map()', fn);
    return this.to(this.graph.addOperator('map', { fn }));
  }

  /** `fn` may emit through `out`, or return an iterable of results. */
  flatMap<R>(fn: (value: T, out: Collector<R>) => void | Iterable<R>): DataStream<R> {
    checkFunction('flatMap()', fn);
    return this.to(this.graph.addOperator('flatMap', { fn }));
  }

  /** Keep the records `predicate` accepts; a type guard narrows the stream's type. */
  filter<S extends T>(predicate: (value: T) => value is S): DataStream<S>;
  filter(predicate: (value: T) => boolean): DataStream<T>;
  filter(predicate: (value: T) => boolean): DataStream<T> {
    checkFunction('filter()', predicate);
    return this.to(this.graph.addOperator('filter', { fn: predicate }));
  }

  /** A non-keyed process function: per-record logic with access to timestamps and the watermark. */
  process<R>(fn: ProcessFunction<T, R>): DataStream<R> {
    checkMethod('process()', fn, 'processElement');
    return this.to(this.graph.addOperator('process', { udf: fn }));
  }

  /** Partition by key: records with the same key go to the same subtask (over 128 key groups). */
  keyBy<K>(keyFn: KeySelector<T, K>): KeyedStream<T, K> {
    checkFunction('keyBy()', keyFn);
    return new KeyedStream<T, K>(this.graph, this.node, keyFn);
  }

  /** Distribute records round-robin over the next operator's subtasks. */
  rebalance(): DataStream<T> {
    return new DataStream<T>(this.graph, this.node, 'REBALANCE');
  }

  /** Send every record to every subtask of the next operator. */
  broadcast(): DataStream<T> {
    return new DataStream<T>(this.graph, this.node, 'BROADCAST');
  }

  /** Keep records on the same subtask index (requires equal parallelism). */
  forward(): DataStream<T> {
    return new DataStream<T>(this.graph, this.node, 'FORWARD');
  }

  /** Merge streams of the same type into one. */
  union(...others: DataStream<T>[]): DataStream<T> {
    const node = this.graph.addOperator('union', {});
    this.feed(node, 0);
    for (const o of others) {
      if (!(o instanceof DataStream)) throw new InvalidArgumentError('union() expects DataStreams');
      if (o.partitioning === 'HASH' || this.partitioning === 'HASH') {
        throw new InvalidArgumentError('union() of keyed streams: union the streams first, then keyBy()');
      }
      o.feed(node, 0);
    }
    return new DataStream<T>(this.graph, node);
  }

  /** Give each record an event timestamp and emit bounded-out-of-orderness watermarks. */
  assignTimestamps(timestampFn: (value: T) => number, options: WatermarkOptions = {}): DataStream<T> {
    checkFunction('assignTimestamps()', timestampFn);
    const maxOutOfOrdernessMs = options.maxOutOfOrdernessMs ?? 0;
    if (!Number.isFinite(maxOutOfOrdernessMs) || maxOutOfOrdernessMs < 0) {
      throw new InvalidArgumentError(
        `assignTimestamps(): maxOutOfOrdernessMs must be >= 0, got ${String(maxOutOfOrdernessMs)}`,
      );
    }
    const opts: Record<string, unknown> = { maxOutOfOrdernessMs };
    if (options.idleTimeoutMs !== undefined) {
      if (!(options.idleTimeoutMs > 0)) throw new InvalidArgumentError(`assignTimestamps(): idleTimeoutMs must be > 0`);
      opts.idleTimeoutMs = options.idleTimeoutMs;
    }
    return this.to(this.graph.addOperator('assignTimestamps', { fn: timestampFn }, { options: opts }));
  }

  /** Windows over the whole stream (not per key), computed by a single subtask; results have key `undefined`. */
  windowAll(assigner: WindowAssigner, options: WindowOptions = {}): WindowedStream<T, undefined> {
    checkAssigner(assigner);
    return new WindowedStream<T, undefined>(
      this.graph,
      this.node,
      () => undefined,
      assigner,
      windowSettings(options),
      true,
    );
  }

  /** Two streams of different types processed by one operator. */
  connect<U>(other: DataStream<U>): ConnectedStreams<T, U> {
    return new ConnectedStreams<T, U>(this.graph, this, other);
  }

  /** A window join: `a.join(b).where(ka).equalTo(kb).window(Windows.tumbling(ms)).apply((x, y) => ...)`. */
  join<U>(other: DataStream<U>): JoinBuilder<T, U> {
    return new JoinBuilder<T, U>(this.graph, this, other);
  }

  /** Write each record to standard output (prefixed with `<subtask>>` when parallel). */
  print(prefix?: string): DataSink {
    return this.sink('print', { connector: 'print', ...(prefix === undefined ? {} : { prefix }) }, {});
  }

  /** Write to a connector's sink, by name (`'file'`) or object. */
  sinkTo(connector: string | Connector, options: Record<string, unknown> = {}): DataSink {
    const name = typeof connector === 'string' ? connector : connector.name;
    const inJob = typeof connector === 'object';
    // A built-in named by string is checked as the same object would be; its spec keeps the options as written.
    const c = inJob ? connector : namedConnector(name);
    if (c && !c.sink) throw new InvalidArgumentError(`connector '${name}' has no sink side`);
    const sink = this.sink(name, {}, inJob ? { connector } : {});
    const node = sink.node;
    const opts = c?.sink ? checkConnectorOptions(c.sink, options, node.name) : options;
    // connectorRescalable: the rescale gate cannot look a job's own connector up, so the spec says it.
    node.options = {
      connector: name,
      ...(inJob ? opts : options),
      ...(inJob
        ? { connectorInJob: true, ...(connector.sink!.rescalable === true ? { connectorRescalable: true } : {}) }
        : {}),
    };
    return sink;
  }

  /** Collect results for the caller of a local run, under `name`: `result.collected[name]`. */
  collect(name = 'default'): DataSink {
    return this.sink('collect', { connector: 'collect', collectName: name }, {});
  }

  private sink(label: string, options: Record<string, unknown>, fns: { connector?: Connector }): DataSink {
    const node = this.graph.addOperator('sink', fns, { options, label });
    this.feed(node, 0);
    return new DataSink(this.graph, node);
  }
}

export class DataSink extends OperatorHandle {}

export class KeyedStream<T, K> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly input: OpNode,
    /** @internal */ readonly keyFn: KeySelector<T, K>,
  ) {}

  private keyed<R>(
    type: 'keyedReduce' | 'keyedProcess',
    fns: Record<string, unknown>,
    options: Record<string, unknown>,
  ): DataStream<R> {
    const node = this.graph.addOperator(type, { ...fns, keySelectors: [this.keyFn] }, { keyed: true, options });
    this.graph.addEdge(this.input, node, 'HASH', 0);
    return new DataStream<R>(this.graph, node);
  }

  /** Emits the running reduction per key for every record (as Flink does). */
  reduce(fn: (a: T, b: T) => T): DataStream<T> {
    checkFunction('reduce()', fn);
    return this.keyed('keyedReduce', { fn }, { mode: 'reduce' });
  }

  /** Running sum per key: of the values themselves, or of `field` (other fields come from the first record). */
  sum(field?: keyof T & string): DataStream<T> {
    return this.keyed('keyedReduce', {}, field === undefined ? { mode: 'sum' } : { mode: 'sum', field });
  }

  /** The records, partitioned by key, as a plain stream: `keyBy(k).map(f)` runs `f` on the key's subtask. */
  private partitioned(): DataStream<T> {
    return new DataStream<T>(this.graph, this.input, 'HASH', this.keyFn as KeySelector<T, unknown>);
  }

  map<R>(fn: (value: T) => R): DataStream<R> {
    return this.partitioned().map(fn);
  }

  flatMap<R>(fn: (value: T, out: Collector<R>) => void | Iterable<R>): DataStream<R> {
    return this.partitioned().flatMap(fn);
  }

  filter(predicate: (value: T) => boolean): DataStream<T> {
    return this.partitioned().filter(predicate);
  }

  /** Running minimum per key of the values, or of `field` (other fields come from the first record). */
  min(field?: keyof T & string): DataStream<T> {
    return this.keyed('keyedReduce', {}, field === undefined ? { mode: 'min' } : { mode: 'min', field });
  }

  /** Running maximum per key of the values, or of `field` (other fields come from the first record). */
  max(field?: keyof T & string): DataStream<T> {
    return this.keyed('keyedReduce', {}, field === undefined ? { mode: 'max' } : { mode: 'max', field });
  }

  /** Running record per key with the smallest `field` (the first such record on ties). */
  minBy(field: keyof T & string): DataStream<T> {
    return this.keyed('keyedReduce', {}, { mode: 'minBy', field });
  }

  /** Running record per key with the largest `field` (the first such record on ties). */
  maxBy(field: keyof T & string): DataStream<T> {
    return this.keyed('keyedReduce', {}, { mode: 'maxBy', field });
  }

  /** Running count per key: `{ key, count }` for every record. */
  count(): DataStream<KeyedCount<K>> {
    return this.keyed('keyedReduce', {}, { mode: 'count' });
  }

  /**
   * Per-key logic with keyed state and timers. `options.states` declares the states it uses with their
   * schemas: a restore from a checkpoint that holds another schema is judged at submit (States, Schema).
   */
  process<R>(fn: KeyedProcessFunction<T, K, R>, options: KeyedProcessOptions = {}): DataStream<R> {
    checkMethod('process()', fn, 'processElement');
    checkMethod('process()', fn, 'onTimer', false);
    const { specs, migrations } = declarationsOf('process()', options.states);
    const declared = Object.keys(specs).length > 0;
    return this.keyed(
      'keyedProcess',
      { udf: fn, ...(declared ? { migrations } : {}) },
      declared ? { states: specs } : {},
    );
  }

  window(assigner: WindowAssigner, options: WindowOptions = {}): WindowedStream<T, K> {
    checkAssigner(assigner);
    return new WindowedStream<T, K>(this.graph, this.input, this.keyFn, assigner, windowSettings(options));
  }

  /** Join with another keyed stream on records whose timestamps lie within `[lower, upper]` of each other. */
  intervalJoin<U>(other: KeyedStream<U, K>): IntervalJoinBuilder<T, U, K> {
    return new IntervalJoinBuilder<T, U, K>(this.graph, this, other);
  }

  /** @internal */
  get inputNode(): OpNode {
    return this.input;
  }
}

function checkAssigner(a: WindowAssigner): void {
  if (typeof a !== 'object' || a === null || !['tumbling', 'sliding', 'session'].includes(a.kind)) {
    throw new InvalidArgumentError(
      'window() expects Windows.tumbling(ms), Windows.sliding(ms, slideMs) or Windows.session(gapMs)',
    );
  }
}

interface WindowSettings {
  time: 'event' | 'processing';
  allowedLatenessMs: number;
}

function windowSettings(o: WindowOptions): WindowSettings {
  const time = o.time ?? 'event';
  const lateness = o.allowedLatenessMs ?? 0;
  if (!Number.isSafeInteger(lateness) || lateness < 0)
    throw new InvalidArgumentError(
      `window(): allowedLatenessMs must be a whole number of ms >= 0, got ${String(lateness)}`,
    );
  if (lateness > 0 && time === 'processing')
    throw new InvalidArgumentError(
      'window(): allowedLatenessMs applies to event-time windows; a processing-time window has no late records',
    );
  return { time, allowedLatenessMs: lateness };
}

/** The key of a pre-aggregated `[key, accumulator]` partial. */
const partialKey = (p: readonly [unknown, unknown]): unknown => p[0];

export class WindowedStream<T, K> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly input: OpNode,
    private readonly keyFn: KeySelector<T, K>,
    private readonly assigner: WindowAssigner,
    private readonly settings: WindowSettings,
    private readonly nonParallel = false,
  ) {}

  private lateOutput = false;

  /**
   * Send the records a window drops as late (its end and any allowedLatenessMs behind the watermark)
   * to a side output, read with `lateData()` on the window's result. Windows of such a stream are not
   * pre-aggregated before the shuffle, so the late records are the records themselves.
   */
  sideOutputLateData(): this {
    this.lateOutput = true;
    return this;
  }

  private win<R>(fn: 'aggregate' | 'reduce' | 'count' | 'process', udf: object | undefined): WindowResultStream<R, T> {
    const assigner = { ...this.assigner };
    const { time, allowedLatenessMs } = this.settings;
    // Tumbling and sliding windows whose accumulators merge are pre-aggregated before the shuffle: each
    // upstream subtask sends one [key, accumulator] per key and pane of a batch, not every record.
    const combine =
      !this.lateOutput &&
      assigner.kind !== 'session' &&
      (fn === 'count' ||
        fn === 'reduce' ||
        (fn === 'aggregate' && typeof (udf as { merge?: unknown }).merge === 'function'));
    let input = this.input;
    if (combine) {
      input = this.graph.addOperator(
        'localWindowAggregate',
        { keySelectors: [this.keyFn], ...(udf ? { udf } : {}) },
        { options: { assigner, time, function: fn } },
      );
      input.sameParallelismAs = this.input;
      input.name = `window pre-aggregation (${input.id})`;
      this.graph.addEdge(this.input, input, 'FORWARD', 0);
    }
    const node = this.graph.addOperator(
      'window',
      { keySelectors: [combine ? partialKey : this.keyFn], ...(udf ? { udf } : {}) },
      {
        keyed: true,
        options: {
          assigner,
          time,
          function: fn,
          ...(combine ? { preAggregated: true } : {}),
          ...(this.nonParallel ? { nonParallel: true } : {}),
          ...(allowedLatenessMs > 0 ? { allowedLatenessMs } : {}),
          ...(this.lateOutput ? { lateDataOutput: true } : {}),
        },
      },
    );
    this.graph.addEdge(input, node, 'HASH', 0);
    return new WindowResultStream<R, T>(this.graph, node, this.lateOutput);
  }

  aggregate<ACC, R>(fn: AggregateFunction<T, ACC, R, K>): WindowResultStream<R, T> {
    checkMethod('aggregate()', fn, 'create');
    checkMethod('aggregate()', fn, 'add');
    checkMethod('aggregate()', fn, 'result');
    checkMethod('aggregate()', fn, 'merge', this.assigner.kind === 'session');
    return this.win('aggregate', fn);
  }

  /** Emits one reduced value per key and window. */
  reduce(fn: (a: T, b: T) => T): WindowResultStream<T, T> {
    checkFunction('reduce()', fn);
    return this.win('reduce', { reduce: fn });
  }

  /** Emits `{ key, start, end, count }` per key and window. */
  count(): WindowResultStream<WindowCount<K>, T> {
    return this.win('count', undefined);
  }

  /** Buffers a window's elements and hands them all to `fn.process` when it fires. */
  process<R>(fn: ProcessWindowFunction<T, K, R>): WindowResultStream<R, T> {
    checkMethod('process()', fn, 'process');
    return this.win('process', fn);
  }
}

/** A window's results; `lateData()` is the stream of the records it dropped as late. */
export class WindowResultStream<R, T> extends DataStream<R> {
  /** @internal */
  constructor(
    graph: GraphBuilder,
    node: OpNode,
    private readonly lateOutput: boolean,
  ) {
    super(graph, node);
  }

  /** The records the window found late (declare it first with `sideOutputLateData()` on the windowed stream). */
  lateData(): DataStream<T> {
    if (!this.lateOutput)
      throw new InvalidArgumentError(
        `lateData(): call sideOutputLateData() on the windowed stream first, as in .window(...).sideOutputLateData().aggregate(...)`,
      );
    // A stream of its own (its name and uid are not the window's): an identity step fed by the side output.
    const node = this.graph.addOperator('map', { fn: (v: unknown) => v }, { label: 'lateData' });
    node.name = 'late data';
    node.sameParallelismAs = this.node;
    this.graph.addEdge(this.node, node, 'FORWARD', 0, 'late');
    return new DataStream<T>(this.graph, node);
  }
}

export class ConnectedStreams<A, B> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly first: DataStream<A>,
    private readonly second: DataStream<B>,
  ) {}

  keyBy<K>(keyFn1: KeySelector<A, K>, keyFn2: KeySelector<B, K>): KeyedConnectedStreams<A, B, K> {
    checkFunction('connect().keyBy() first key', keyFn1);
    checkFunction('connect().keyBy() second key', keyFn2);
    return new KeyedConnectedStreams<A, B, K>(this.graph, this.first.node, this.second.node, keyFn1, keyFn2);
  }

  process<R>(fn: CoProcessFunction<A, B, R>): DataStream<R> {
    checkMethod('process()', fn, 'processElement1');
    checkMethod('process()', fn, 'processElement2');
    const node = this.graph.addOperator('coProcess', { udf: fn }, { inputs: 2 });
    this.first.feed(node, 0);
    this.second.feed(node, 1);
    return new DataStream<R>(this.graph, node);
  }
}

export class KeyedConnectedStreams<A, B, K> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly first: OpNode,
    private readonly second: OpNode,
    private readonly keyFn1: KeySelector<A, K>,
    private readonly keyFn2: KeySelector<B, K>,
  ) {}

  process<R>(fn: KeyedCoProcessFunction<A, B, K, R>): DataStream<R> {
    checkMethod('process()', fn, 'processElement1');
    checkMethod('process()', fn, 'processElement2');
    checkMethod('process()', fn, 'onTimer', false);
    const node = this.graph.addOperator(
      'coProcess',
      { udf: fn, keySelectors: [this.keyFn1, this.keyFn2] },
      { inputs: 2, keyed: true },
    );
    this.graph.addEdge(this.first, node, 'HASH', 0);
    this.graph.addEdge(this.second, node, 'HASH', 1);
    return new DataStream<R>(this.graph, node);
  }
}

export class IntervalJoinBuilder<A, B, K> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly left: KeyedStream<A, K>,
    private readonly right: KeyedStream<B, K>,
  ) {}

  /** Right records with `left.ts + lowerMs <= right.ts <= left.ts + upperMs` join the left record. */
  between(
    lowerMs: number,
    upperMs: number,
  ): {
    process<R>(fn: IntervalJoinFunction<A, B, K, R>): DataStream<R>;
    apply<R>(fn: (left: A, right: B) => R): DataStream<R>;
  } {
    if (!Number.isFinite(lowerMs) || !Number.isFinite(upperMs) || lowerMs > upperMs) {
      throw new InvalidArgumentError(
        `intervalJoin().between(lower, upper) needs finite lower <= upper, got ${lowerMs}, ${upperMs}`,
      );
    }
    const make = <R>(udf: IntervalJoinFunction<A, B, K, R>): DataStream<R> => {
      const node = this.graph.addOperator(
        'intervalJoin',
        { udf, keySelectors: [this.left.keyFn, this.right.keyFn] },
        { inputs: 2, keyed: true, options: { lowerMs, upperMs } },
      );
      this.graph.addEdge(this.left.inputNode, node, 'HASH', 0);
      this.graph.addEdge(this.right.inputNode, node, 'HASH', 1);
      return new DataStream<R>(this.graph, node);
    };
    return {
      process: <R>(fn: IntervalJoinFunction<A, B, K, R>) => {
        checkMethod('intervalJoin().process()', fn, 'processElement');
        return make(fn);
      },
      apply: <R>(fn: (left: A, right: B) => R) => {
        checkFunction('intervalJoin().apply()', fn);
        return make<R>({ processElement: (l, r, _ctx, out) => out.collect(fn(l, r)) });
      },
    };
  }
}

export class JoinBuilder<A, B> {
  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    private readonly left: DataStream<A>,
    private readonly right: DataStream<B>,
  ) {}

  where<K>(leftKey: KeySelector<A, K>): {
    equalTo(rightKey: KeySelector<B, K>): {
      window(
        assigner: WindowAssigner,
        options?: WindowOptions,
      ): {
        apply<R>(fn: (left: A, right: B, window: TimeWindow) => R): DataStream<R>;
      };
    };
  } {
    checkFunction('join().where()', leftKey);
    return {
      equalTo: (rightKey) => {
        checkFunction('join().equalTo()', rightKey);
        return {
          window: (assigner, options = {}) => {
            checkAssigner(assigner);
            if (options.allowedLatenessMs)
              throw new InvalidArgumentError('window joins do not take allowedLatenessMs: a late pair is dropped');
            if (assigner.kind === 'session') {
              throw new InvalidArgumentError(
                'window joins support tumbling and sliding windows; for sessions use connect().keyBy().process()',
              );
            }
            return {
              apply: <R>(fn: (left: A, right: B, window: TimeWindow) => R) => {
                checkFunction('join().apply()', fn);
                const node = this.graph.addOperator(
                  'windowJoin',
                  { fn, keySelectors: [leftKey, rightKey] },
                  { inputs: 2, keyed: true, options: { assigner: { ...assigner }, time: options.time ?? 'event' } },
                );
                this.graph.addEdge(this.left.node, node, 'HASH', 0);
                this.graph.addEdge(this.right.node, node, 'HASH', 1);
                return new DataStream<R>(this.graph, node);
              },
            };
          },
        };
      },
    };
  }
}
