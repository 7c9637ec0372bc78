/** Keyed operators: state per key (kept per key group) and per-key timers. */
import { StateError } from '../../errors.js';
import { KeyGroupRange, type StateDeclarationSpec } from '../../plan/index.js';
import type {
  RuntimeContext,
  Collector,
  KeyedContext,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  TimerService,
  ValueState,
} from '../../sdk/index.js';
import { KeyedStateBackend, type BackendSnapshot } from '../../state/index.js';
import { NO_TIMESTAMP } from '../elements.js';
import { StreamOperator } from '../operator.js';
import type { RescaledParts } from '../rescale.js';
import { KeyedTimerService, type KeyedTimer } from '../timers.js';
import { processContext, timestampedCollector } from './basic.js';

export abstract class KeyedOperator extends StreamOperator {
  backend!: KeyedStateBackend;
  timers!: KeyedTimerService;
  private keySelectors!: ((v: unknown) => unknown)[];

  /** Create this subtask's keyed state and timers; keyed operators call it first thing in open(). */
  protected initKeyedState(): void {
    const { subtaskIndex, parallelism, spec } = this.ctx;
    this.backend = new KeyedStateBackend(
      KeyGroupRange.forSubtask(subtaskIndex, parallelism),
      spec.name,
      undefined,
      undefined,
      undefined,
      this.ctx.diskState && { ...this.ctx.diskState, tag: `${spec.id}-${subtaskIndex}` },
    );
    // Declared states (process(fn, { states })): before a restore, which judges and migrates by them.
    const declared = (spec.options.states ?? {}) as Record<string, StateDeclarationSpec>;
    for (const [name, d] of Object.entries(declared)) this.backend.declare(name, d, this.ctx.fns.migrations?.[name]);
    this.timers = new KeyedTimerService(this.backend, this.ctx.time, (t) => this.fireProcessingTimer(t));
    this.keySelectors = this.ctx.fns.keySelectors ?? [];
  }

  /** Extract the record's key on `input` and make it current. */
  protected setKeyOf(value: unknown, input: number): void {
    let key: unknown;
    try {
      key = this.keySelectors[input]!(value);
    } catch (err) {
      throw this.userError(err);
    }
    this.backend.setCurrentKey(key);
  }

  override processWatermark(watermark: number): void {
    this.currentWatermark = watermark;
    for (let t = this.timers.event.pollDue(watermark); t; t = this.timers.event.pollDue(watermark)) {
      this.backend.setCurrentKeyUnchecked(t.key, t.normalizedKey, t.keyGroup);
      this.onTimer(t.timestamp, 'event');
    }
    this.onWatermark(watermark);
    this.out.emitWatermark(watermark);
  }

  private fireProcessingTimer(t: KeyedTimer): void {
    this.backend.setCurrentKeyUnchecked(t.key, t.normalizedKey, t.keyGroup);
    this.onTimer(t.timestamp, 'processing');
  }

  override snapshotState(): unknown {
    if (!this.backend) return this.snapshotOwn();
    // Timers, window panes and sessions are tables in the backend: its copy-on-write snapshot has them.
    const own = this.snapshotOwn();
    return this.backend.snapshot().then((state) => ({ state, own }));
  }

  override async restoreState(snapshot: unknown): Promise<void> {
    if (snapshot === undefined) return;
    if (!this.backend) {
      this.restoreOwn(snapshot);
      return;
    }
    const s = snapshot as { state: BackendSnapshot; own: unknown };
    await this.backend.restore(s.state);
    this.timers.rebuild();
    this.restoreOwn(s.own);
  }

  /**
   * Rescaled: the backend takes every overlapping part (keeping only this subtask's key groups: they are
   * disjoint across the earlier subtasks), then the operator's own state is merged (mergeOwn).
   */
  override async restoreRescaled(parts: RescaledParts): Promise<void> {
    type Part = { state: BackendSnapshot; own: unknown } | undefined;
    if (!this.backend) {
      this.restoreOwn(this.mergeOwn(parts.overlapping, parts.assigned));
      return;
    }
    for (const p of parts.overlapping as Part[]) if (p) await this.backend.restore(p.state);
    this.timers.rebuild();
    this.restoreOwn(
      this.mergeOwn(
        (parts.overlapping as Part[]).map((p) => p?.own),
        (parts.assigned as Part[]).map((p) => p?.own),
      ),
    );
  }

  /**
   * This operator's own state (snapshotOwn) from the earlier subtasks' after a rescale: `overlapping`
   * are those whose key groups overlap this subtask's, `assigned` those it takes over. Default: none is kept.
   */
  protected mergeOwn(overlapping: unknown[], assigned: unknown[]): unknown {
    if ([...overlapping, ...assigned].some((o) => o !== undefined))
      throw new StateError(
        `operator '${this.ctx.spec.name}' keeps state of its own that cannot be restored at another parallelism`,
      );
    return undefined;
  }

  /** Close the keyed state (a disk backend's store goes with it); subclasses that close more call this. */
  override async close(): Promise<void> {
    await this.backend?.close();
  }

  /** State an operator keeps outside the backend (window panes, for one). */
  protected snapshotOwn(): unknown {
    return undefined;
  }

  protected restoreOwn(_own: unknown): void {}

  /** A timer of the current key fired. */
  protected onTimer(_timestamp: number, _domain: 'event' | 'processing'): void {}

  /** After event-time timers up to `watermark` have fired, before the watermark moves on. */
  protected onWatermark(_watermark: number): void {}

  /** A KeyedContext reading this operator's current key, timestamp and domain; one object reused. */
  protected keyedContext<K>(state: { timestamp: number; domain: 'event' | 'processing' | undefined }): KeyedContext<K> {
    const backend = this.backend;
    const timerService = this.timerService();
    return {
      get key() {
        return backend.currentKey as K;
      },
      get timestamp() {
        return state.timestamp === NO_TIMESTAMP ? undefined : state.timestamp;
      },
      get timeDomain() {
        return state.domain;
      },
      state: backend,
      timers: timerService,
    };
  }

  protected timerService(): TimerService {
    const timers = this.timers;
    return {
      registerEventTime: (ts) => timers.registerEventTime(ts),
      registerProcessingTime: (ts) => timers.registerProcessingTime(ts),
      deleteEventTime: (ts) => timers.deleteEventTime(ts),
      deleteProcessingTime: (ts) => timers.deleteProcessingTime(ts),
      currentWatermark: () => this.currentWatermark,
      currentProcessingTime: () => this.ctx.time.now(),
    };
  }
}

/** keyBy().reduce / sum / count: emits the running value per key for every record. */
export class KeyedReduceOperator extends KeyedOperator {
  private state!: ValueState<unknown>;
  private step!: (current: unknown, value: unknown) => unknown;
  /** What a record carries, when it is not the state itself. */
  private output: ((state: unknown) => unknown) | undefined;

  override open(): void {
    this.initKeyedState();
    const { mode, field } = this.ctx.spec.options as { mode: string; field?: string };
    // Only a user's reduce function may change the current value in place.
    this.state = this.backend.value('reduce', { immutableValues: mode !== 'reduce' });
    const fn = this.ctx.fns.fn as ((a: unknown, b: unknown) => unknown) | undefined;
    if (mode === 'reduce') this.step = (cur, v) => (cur === undefined ? v : fn!(cur, v));
    else if (mode === 'count') {
      // The state is the number alone (a tenth of the bytes to snapshot); the record carries the key.
      this.step = (cur) => ((cur as number | undefined) ?? 0) + 1;
      this.output = (count) => ({ key: this.backend.currentKey, count });
    } else if (mode === 'min' || mode === 'max' || mode === 'minBy' || mode === 'maxBy') {
      this.step = extremum(mode, field);
    } else if (field === undefined) {
      this.step = (cur, v) => {
        if (typeof v !== 'number')
          throw new TypeError(`sum() without a field needs numbers, got ${typeof v}; use sum('field')`);
        return ((cur as number | undefined) ?? 0) + v;
      };
    } else {
      this.step = (cur, v) => {
        const x = (v as Record<string, unknown>)?.[field];
        if (typeof x !== 'number')
          throw new TypeError(`sum('${field}') needs a number in field '${field}', got ${typeof x}`);
        if (cur === undefined) return { ...(v as object) };
        const c = cur as Record<string, number>;
        return { ...c, [field]: c[field]! + x };
      };
    }
  }

  processElement(value: unknown, timestamp: number): void {
    this.setKeyOf(value, 0);
    let next: unknown;
    try {
      next = this.step(this.state.value(), value);
    } catch (err) {
      throw this.userError(err);
    }
    this.state.update(next);
    this.out.collect(this.output ? this.output(next) : next, timestamp);
  }
}

/** The step of min/max (the extreme value; other fields from the first record) and minBy/maxBy (the extreme record). */
function extremum(
  mode: 'min' | 'max' | 'minBy' | 'maxBy',
  field: string | undefined,
): (cur: unknown, v: unknown) => unknown {
  const better = mode === 'min' || mode === 'minBy' ? (a: number, b: number) => a < b : (a: number, b: number) => a > b;
  const read = (v: unknown): number => {
    const x = field === undefined ? v : (v as Record<string, unknown>)?.[field];
    if (typeof x !== 'number') {
      throw new TypeError(
        field === undefined
          ? `${mode}() without a field needs numbers, got ${typeof x}`
          : `${mode}('${field}') needs a number in field '${field}', got ${typeof x}`,
      );
    }
    return x;
  };
  if (mode === 'minBy' || mode === 'maxBy')
    return (cur, v) => (cur === undefined || better(read(v), read(cur)) ? v : cur);
  if (field === undefined) return (cur, v) => (cur === undefined || better(read(v), read(cur)) ? v : cur);
  return (cur, v) => {
    const x = read(v);
    if (cur === undefined) return { ...(v as object) };
    return better(x, read(cur)) ? { ...(cur as object), [field]: x } : cur;
  };
}

/** What keyed process and co-process functions share: a user function with optional onTimer. */
interface TimerUdf {
  open?(ctx: RuntimeContext): void | Promise<void>;
  onTimer?(timestampMs: number, ctx: KeyedContext<unknown>, out: Collector<unknown>): void;
  close?(): void | Promise<void>;
}

/**
 * The plumbing of operators that call a user function per record: one reused context and collector,
 * the current record's timestamp, and timers delivered to the function's onTimer.
 */
abstract class UserFunctionOperator<U extends TimerUdf> extends KeyedOperator {
  protected udf!: U;
  protected readonly cur = { timestamp: NO_TIMESTAMP, domain: undefined as 'event' | 'processing' | undefined };
  protected collector!: Collector<unknown>;

  protected async openUserFunction(): Promise<void> {
    this.udf = this.ctx.fns.udf as U;
    this.collector = timestampedCollector(this, () => this.cur.timestamp);
    await this.openUdf(this.udf);
  }

  /** Call a method of the user function for one record (no allocation), attributing a throw to this operator. */
  protected invoke<C>(
    method: (value: unknown, ctx: C, out: Collector<unknown>) => void,
    context: C,
    value: unknown,
    timestamp: number,
  ): void {
    this.cur.timestamp = timestamp;
    this.cur.domain = undefined;
    try {
      method.call(this.udf, value, context, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  protected abstract timerContext(): KeyedContext<unknown>;

  protected override onTimer(timestamp: number, domain: 'event' | 'processing'): void {
    if (!this.udf.onTimer) return;
    this.cur.timestamp = domain === 'event' ? timestamp : NO_TIMESTAMP;
    this.cur.domain = domain;
    try {
      this.udf.onTimer(timestamp, this.timerContext(), this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  override async close(): Promise<void> {
    try {
      await this.closeUdf(this.udf);
    } finally {
      await super.close();
    }
  }
}

/** keyBy().process(): user logic with keyed state and timers. */
export class KeyedProcessOperator extends UserFunctionOperator<
  KeyedProcessFunction<unknown, unknown, unknown> & TimerUdf
> {
  private context!: KeyedContext<unknown>;

  override async open(): Promise<void> {
    this.initKeyedState();
    this.context = this.keyedContext(this.cur);
    await this.openUserFunction();
  }

  protected timerContext(): KeyedContext<unknown> {
    return this.context;
  }

  processElement(value: unknown, timestamp: number): void {
    this.setKeyOf(value, 0);
    this.invoke(this.udf.processElement, this.context, value, timestamp);
  }
}

/** Keyed and non-keyed co-process functions differ only in the context they receive. */
type AnyCoProcessFunction = KeyedCoProcessFunction<unknown, unknown, unknown, unknown> & TimerUdf;

/** connect().process() and connect().keyBy().process(): two inputs of different types. */
export class CoProcessOperator extends UserFunctionOperator<AnyCoProcessFunction> {
  private keyed = false;
  /** A KeyedContext when keyed; a ProcessContext (what CoProcessFunction expects) otherwise. */
  private context!: KeyedContext<unknown>;

  override async open(): Promise<void> {
    this.keyed = this.ctx.spec.keyed;
    if (this.keyed) this.initKeyedState();
    this.context = this.keyed
      ? this.keyedContext(this.cur)
      : (processContext(this, () => this.cur.timestamp) as unknown as KeyedContext<unknown>);
    await this.openUserFunction();
  }

  protected timerContext(): KeyedContext<unknown> {
    return this.context;
  }

  processElement(value: unknown, timestamp: number): void {
    if (this.keyed) this.setKeyOf(value, 0);
    this.invoke(this.udf.processElement1, this.context, value, timestamp);
  }

  override processElement2(value: unknown, timestamp: number): void {
    if (this.keyed) this.setKeyOf(value, 1);
    this.invoke(this.udf.processElement2, this.context, value, timestamp);
  }

  override processWatermark(watermark: number): void {
    if (this.keyed) super.processWatermark(watermark);
    else {
      this.currentWatermark = watermark;
      this.out.emitWatermark(watermark);
    }
  }
}
