/**
 * Local pre-aggregation ahead of a window's shuffle (design record 010).
 */
import type { WindowAssigner } from '../../sdk/index.js';
import { normalizeKey } from '../../plan/index.js';
import { StreamOperator } from '../operator.js';
import { paneStart } from './pane.js';
import { windowFunctionAccumulator, type WindowAccumulator } from './window-accumulators.js';

interface PartialEntry {
  key: unknown;
  acc: unknown;
  /** The latest timestamp among its records (all in one pane, so in the same windows). */
  timestamp: number;
}

/**
 * Local pre-aggregation ahead of a window's shuffle, chained to the upstream operator: accumulates the
 * records of a batch per key and pane (the slide of a sliding window, the window of a tumbling one;
 * per key alone for processing time), and sends one `[key, accumulator]` per group when the batch
 * ends, and before a watermark, a barrier or the end of input passes, so nothing is held across them.
 * The window operator downstream merges the partials. A hot key then crosses the shuffle once per
 * batch instead of once per record.
 */
export class LocalWindowAggregateOperator extends StreamOperator {
  private agg!: WindowAccumulator;
  private keyOf!: (value: unknown) => unknown;
  private slide = 1;
  private offset = 0;
  private processingTime = false;
  private readonly groups = new Map<number, Map<unknown, PartialEntry>>();

  override open(): void {
    const o = this.ctx.spec.options as { assigner: Exclude<WindowAssigner, { kind: 'session' }>; time: 'event' | 'processing' };
    this.slide = o.assigner.kind === 'sliding' ? o.assigner.slideMs : o.assigner.sizeMs;
    this.offset = o.assigner.offsetMs;
    this.processingTime = o.time === 'processing';
    this.agg = windowFunctionAccumulator(this);
    this.keyOf = this.ctx.fns.keySelectors![0]!;
  }

  processElement(value: unknown, timestamp: number): void {
    let key: unknown;
    let e: PartialEntry | undefined;
    try {
      key = this.keyOf(value);
      const pane = this.processingTime ? 0 : paneStart(timestamp, this.offset, this.slide);
      let g = this.groups.get(pane);
      if (!g) this.groups.set(pane, (g = new Map()));
      const nk = normalizeKey(key);
      e = g.get(nk);
      if (!e) g.set(nk, (e = { key, acc: this.agg.create(), timestamp }));
      e.acc = this.agg.add(e.acc, value, 0);
    } catch (err) {
      throw this.userError(err);
    }
    if (timestamp > e.timestamp) e.timestamp = timestamp;
  }

  private flush(): void {
    if (this.groups.size === 0) return;
    for (const g of this.groups.values()) for (const e of g.values()) this.out.collect([e.key, e.acc], e.timestamp);
    this.groups.clear();
  }

  override endBatch(): void {
    this.flush();
  }

  override processWatermark(watermark: number): void {
    this.flush();
    super.processWatermark(watermark);
  }

  override prepareSnapshot(): void {
    this.flush();
  }

  override finish(): void {
    this.flush();
  }
}
