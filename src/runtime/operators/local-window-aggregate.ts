import type { WindowAssigner } from '../../sdk/index.js';
import { normalizeKey } from '../../plan/index.js';
import { StreamOperator } from '../operator.js';
import { paneStart } from './pane.js';
import { windowFunctionAccumulator, type WindowAccumulator } from './window-accumulators.js';

/** Groups held across batches at most: past it, every one leaves at the end of the batch. */
export const HELD_GROUPS_LIMIT = 65_536;

interface PartialEntry {
  key: unknown;
  acc: unknown;
  /** The latest timestamp among its records (all in one pane, so in the same windows). */
  timestamp: number;
}

/**
 * Local pre-aggregation ahead of a window's shuffle (design record 010), chained to the upstream
 * operator: accumulates records per key and pane (the slide of a sliding window, the window of a
 * tumbling one; per key alone for processing time) and sends one `[key, accumulator]` per group. The
 * window operator downstream merges the partials, so a hot key crosses the shuffle once per pane
 * instead of once per record.
 *
 * In event time a pane's groups are held until a watermark reaches the pane's last millisecond: no
 * window it is part of can fire before that watermark arrives downstream, and the groups go ahead of
 * it. Late records' groups leave at the end of their batch. Held groups also leave before a barrier,
 * an idle status or the end of input passes (nothing is held across them, so there is no state to
 * checkpoint), and all of them when they exceed HELD_GROUPS_LIMIT. In processing time they leave at
 * the end of every batch.
 */
export class LocalWindowAggregateOperator extends StreamOperator {
  private agg!: WindowAccumulator;
  private keyOf!: (value: unknown) => unknown;
  private slide = 1;
  private offset = 0;
  private processingTime = false;
  /** Per pane start, its groups. */
  private readonly groups = new Map<number, Map<unknown, PartialEntry>>();
  private held = 0;

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
      if (!e) {
        g.set(nk, (e = { key, acc: this.agg.create(), timestamp }));
        this.held++;
      }
      e.acc = this.agg.add(e.acc, value, 0);
    } catch (err) {
      throw this.userError(err);
    }
    if (timestamp > e.timestamp) e.timestamp = timestamp;
  }

  /** Send the groups of every pane whose last millisecond is at or before `time` (all: Infinity). */
  private flush(time = Infinity): void {
    if (this.held === 0) return;
    for (const [pane, g] of this.groups) {
      if (pane + this.slide - 1 > time) continue;
      for (const e of g.values()) this.out.collect([e.key, e.acc], e.timestamp);
      this.held -= g.size;
      this.groups.delete(pane);
    }
  }

  override endBatch(): void {
    // Groups of panes the watermark has passed (late records) leave at once, as they would unheld.
    this.flush(this.processingTime || this.held > HELD_GROUPS_LIMIT ? Infinity : this.currentWatermark);
  }

  override processWatermark(watermark: number): void {
    this.flush(watermark);
    super.processWatermark(watermark);
  }

  override processStatus(idle: boolean): void {
    // An idle input no longer holds the watermark downstream: what it held would arrive late.
    if (idle) this.flush();
    super.processStatus(idle);
  }

  override prepareSnapshot(): void {
    this.flush();
  }

  override finish(): void {
    this.flush();
  }
}
