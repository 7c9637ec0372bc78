/** Keyed operators: state per key (kept per key group) and per-key timers. */
import { KeyGroupRange } from '../../plan/index.js';
import type {
  Collector,
  CoProcessFunction,
  KeyedContext,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  ProcessContext,
  TimerService,
  ValueState,
} from '../../sdk/index.js';
import { KeyedStateBackend } from '../../state/index.js';
import { NO_TIMESTAMP } from '../elements.js';
import { StreamOperator } from '../operator.js';
import { KeyedTimerService, type KeyedTimer } from '../timers.js';
import { processContext, timestampedCollector } from './basic.js';

export abstract class KeyedOperator extends StreamOperator {
  backend!: KeyedStateBackend;
  timers!: KeyedTimerService;
  private keySelectors!: ((v: unknown) => unknown)[];

  /** Create this subtask's keyed state and timers; keyed operators call it first thing in open(). */
  protected initKeyedState(): void {
    const { subtaskIndex, parallelism, spec } = this.ctx;
    this.backend = new KeyedStateBackend(KeyGroupRange.forSubtask(subtaskIndex, parallelism), spec.name);
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

  override open(): void {
    this.initKeyedState();
    this.state = this.backend.value('reduce');
    const { mode, field } = this.ctx.spec.options as { mode: string; field?: string };
    const fn = this.ctx.fns.fn as ((a: unknown, b: unknown) => unknown) | undefined;
    if (mode === 'reduce') this.step = (cur, v) => (cur === undefined ? v : fn!(cur, v));
    else if (mode === 'count') {
      this.step = (cur) => ({ key: this.backend.currentKey, count: ((cur as { count: number } | undefined)?.count ?? 0) + 1 });
    } else if (mode === 'min' || mode === 'max' || mode === 'minBy' || mode === 'maxBy') {
      this.step = extremum(mode, field);
    } else if (field === undefined) {
      this.step = (cur, v) => {
        if (typeof v !== 'number') throw new TypeError(`sum() without a field needs numbers, got ${typeof v}; use sum('field')`);
        return ((cur as number | undefined) ?? 0) + v;
      };
    } else {
      this.step = (cur, v) => {
        const x = (v as Record<string, unknown>)?.[field];
        if (typeof x !== 'number') throw new TypeError(`sum('${field}') needs a number in field '${field}', got ${typeof x}`);
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
    this.out.collect(next, timestamp);
  }
}

/** The step of min/max (the extreme value; other fields from the first record) and minBy/maxBy (the extreme record). */
function extremum(mode: 'min' | 'max' | 'minBy' | 'maxBy', field: string | undefined): (cur: unknown, v: unknown) => unknown {
  const better = mode === 'min' || mode === 'minBy' ? (a: number, b: number) => a < b : (a: number, b: number) => a > b;
  const read = (v: unknown): number => {
    const x = field === undefined ? v : (v as Record<string, unknown>)?.[field];
    if (typeof x !== 'number') {
      throw new TypeError(field === undefined ? `${mode}() without a field needs numbers, got ${typeof x}` : `${mode}('${field}') needs a number in field '${field}', got ${typeof x}`);
    }
    return x;
  };
  if (mode === 'minBy' || mode === 'maxBy') return (cur, v) => (cur === undefined || better(read(v), read(cur)) ? v : cur);
  if (field === undefined) return (cur, v) => (cur === undefined || better(read(v), read(cur)) ? v : cur);
  return (cur, v) => {
    const x = read(v);
    if (cur === undefined) return { ...(v as object) };
    return better(x, read(cur)) ? { ...(cur as object), [field]: x } : cur;
  };
}

/** keyBy().process(): user logic with keyed state and timers. */
export class KeyedProcessOperator extends KeyedOperator {
  private udf!: KeyedProcessFunction<unknown, unknown, unknown>;
  private readonly cur = { timestamp: NO_TIMESTAMP, domain: undefined as 'event' | 'processing' | undefined };
  private context!: KeyedContext<unknown>;
  private collector!: Collector<unknown>;

  override async open(): Promise<void> {
    this.initKeyedState();
    this.udf = this.ctx.fns.udf as KeyedProcessFunction<unknown, unknown, unknown>;
    this.context = this.keyedContext(this.cur);
    this.collector = timestampedCollector(this, () => this.cur.timestamp);
    await this.openUdf(this.udf);
  }

  processElement(value: unknown, timestamp: number): void {
    this.setKeyOf(value, 0);
    this.cur.timestamp = timestamp;
    this.cur.domain = undefined;
    try {
      this.udf.processElement(value, this.context, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  protected override onTimer(timestamp: number, domain: 'event' | 'processing'): void {
    if (!this.udf.onTimer) return;
    this.cur.timestamp = domain === 'event' ? timestamp : NO_TIMESTAMP;
    this.cur.domain = domain;
    try {
      this.udf.onTimer(timestamp, this.context, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  override close(): Promise<void> {
    return this.closeUdf(this.udf);
  }
}

/** connect().process() and connect().keyBy().process(): two inputs of different types. */
export class CoProcessOperator extends KeyedOperator {
  private keyed = false;
  private udf!: KeyedCoProcessFunction<unknown, unknown, unknown, unknown> & CoProcessFunction<unknown, unknown, unknown>;
  private readonly cur = { timestamp: NO_TIMESTAMP, domain: undefined as 'event' | 'processing' | undefined };
  private context!: KeyedContext<unknown> | ProcessContext;
  private collector!: Collector<unknown>;

  override async open(): Promise<void> {
    this.keyed = this.ctx.spec.keyed;
    if (this.keyed) this.initKeyedState();
    this.udf = this.ctx.fns.udf as typeof this.udf;
    this.context = this.keyed ? this.keyedContext(this.cur) : processContext(this, () => this.cur.timestamp);
    this.collector = timestampedCollector(this, () => this.cur.timestamp);
    await this.openUdf(this.udf);
  }

  processElement(value: unknown, timestamp: number): void {
    if (this.keyed) this.setKeyOf(value, 0);
    this.cur.timestamp = timestamp;
    this.cur.domain = undefined;
    try {
      this.udf.processElement1(value, this.context as KeyedContext<unknown>, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  override processElement2(value: unknown, timestamp: number): void {
    if (this.keyed) this.setKeyOf(value, 1);
    this.cur.timestamp = timestamp;
    this.cur.domain = undefined;
    try {
      this.udf.processElement2(value, this.context as KeyedContext<unknown>, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  override processWatermark(watermark: number): void {
    if (this.keyed) super.processWatermark(watermark);
    else {
      this.currentWatermark = watermark;
      this.out.emitWatermark(watermark);
    }
  }

  protected override onTimer(timestamp: number, domain: 'event' | 'processing'): void {
    if (!this.udf.onTimer) return;
    this.cur.timestamp = domain === 'event' ? timestamp : NO_TIMESTAMP;
    this.cur.domain = domain;
    try {
      this.udf.onTimer(timestamp, this.context as KeyedContext<unknown>, this.collector);
    } catch (err) {
      throw this.userError(err);
    }
  }

  override close(): Promise<void> {
    return this.closeUdf(this.udf);
  }
}
