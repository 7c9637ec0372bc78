/**
 * The interval join: a left record at time t joins right records of the same key with timestamps in
 * [t + lower, t + upper]. Both sides are buffered in keyed list state and dropped once the watermark
 * makes further matches impossible.
 */
import type { Collector, IntervalJoinFunction, ListState } from '../../sdk/index.js';
import { NO_TIMESTAMP } from '../elements.js';
import { KeyedOperator } from './keyed.js';

interface Buffered {
  value: unknown;
  ts: number;
}

export class IntervalJoinOperator extends KeyedOperator {
  private lower = 0;
  private upper = 0;
  private udf!: IntervalJoinFunction<unknown, unknown, unknown, unknown>;
  private left!: ListState<Buffered>;
  private right!: ListState<Buffered>;
  private emitTs = NO_TIMESTAMP;
  private collector!: Collector<unknown>;
  lateRecordsDropped = 0;
  private readonly joinCtx = { key: undefined as unknown, leftTimestamp: 0, rightTimestamp: 0 };

  override async open(): Promise<void> {
    this.initKeyedState();
    this.lower = this.ctx.spec.options.lowerMs as number;
    this.upper = this.ctx.spec.options.upperMs as number;
    this.udf = this.ctx.fns.udf as typeof this.udf;
    this.left = this.backend.list('left');
    this.right = this.backend.list('right');
    this.collector = { collect: (v) => this.out.collect(v, this.emitTs) };
  }

  processElement(value: unknown, timestamp: number): void {
    this.onRecord(value, timestamp, 0);
  }

  override processElement2(value: unknown, timestamp: number): void {
    this.onRecord(value, timestamp, 1);
  }

  private onRecord(value: unknown, ts: number, input: 0 | 1): void {
    if (ts === NO_TIMESTAMP) {
      throw this.userError(
        new Error('an interval join needs event timestamps: call assignTimestamps(...) on both inputs'),
      );
    }
    this.setKeyOf(value, input);
    // As in Flink, a record behind the watermark is late and dropped.
    if (ts < this.currentWatermark) {
      this.lateRecordsDropped++;
      return;
    }
    (input === 0 ? this.left : this.right).add({ value, ts });
    const others = input === 0 ? this.right.get() : this.left.get();
    const lo = input === 0 ? ts + this.lower : ts - this.upper;
    const hi = input === 0 ? ts + this.upper : ts - this.lower;
    this.joinCtx.key = this.backend.currentKey;
    for (const o of others) {
      if (o.ts < lo || o.ts > hi) continue;
      const [l, r] = input === 0 ? [{ value, ts }, o] : [o, { value, ts }];
      this.emitTs = Math.max(l.ts, r.ts);
      this.joinCtx.leftTimestamp = l.ts;
      this.joinCtx.rightTimestamp = r.ts;
      try {
        this.udf.processElement(l.value, r.value, this.joinCtx, this.collector);
      } catch (err) {
        throw this.userError(err);
      }
    }
    // Clean this key once the watermark passes what it could still match.
    this.timers.registerEventTime(input === 0 ? ts + this.upper : ts - this.lower);
  }

  protected override onTimer(timestamp: number): void {
    const wm = timestamp;
    // A side left empty is cleared, so a key whose rows have all expired leaves the state for good.
    for (const [side, keep] of [
      [this.left, (b: Buffered) => b.ts + this.upper > wm],
      [this.right, (b: Buffered) => b.ts - this.lower > wm],
    ] as const) {
      const rows = side.get();
      const kept = rows.filter(keep);
      if (kept.length === 0) side.clear();
      else if (kept.length !== rows.length) side.update(kept);
    }
  }
}
