import type { WindowAssigner } from '../../sdk/index.js';
import { normalizeKey } from '../../plan/index.js';
import { isInt32 } from '../../util/index.js';
import { StreamOperator } from '../operator.js';
import { NumberPartials } from './number-partials.js';
import { paneStart } from './pane.js';
import { int32IfIntegral, windowFunctionAccumulator, type WindowAccumulator } from './window-accumulators.js';

/** Groups held across batches at most: past it, every one leaves at the end of the batch. */
export const HELD_GROUPS_LIMIT = 65_536;
/** Emptied number tables kept for later panes (a pane completes every slide; a few are held at once). */
const SPARE_TABLES = 8;

interface PartialEntry {
  key: unknown;
  acc: unknown;
  /** The latest timestamp among its records (all in one pane, so in the same windows). */
  timestamp: number;
}

/** One pane's groups: a number accumulator's 32-bit integer keys in a NumberPartials, any other in a Map. */
interface PaneGroups {
  numbers: NumberPartials | undefined;
  others: Map<unknown, PartialEntry> | undefined;
}

/** A key the NumberPartials holds as it is: a 32-bit integer, not -0 (which an Int32Array would make 0). */
const isInt32Key = (key: unknown): key is number => typeof key === 'number' && isInt32(key);

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
 * checkpoint), and all of them when they exceed HELD_GROUPS_LIMIT. In processing time they leave when
 * the task is about to wait or yield (beforeWait), as its writer's partly filled batches do.
 *
 * A count's groups under 32-bit integer keys are held in typed arrays (NumberPartials), reused from
 * pane to pane, so they allocate nothing until they leave; other groups are objects in a Map. Either
 * way a pane's groups leave in the order their keys first came (all integer keys first in a pane that
 * also has others).
 */
export class LocalWindowAggregateOperator extends StreamOperator {
  private agg!: WindowAccumulator;
  private keyOf!: (value: unknown) => unknown;
  private slide = 1;
  private offset = 0;
  private processingTime = false;
  /** The accumulator is a number (create() and add() return numbers): integer keys go to a NumberPartials. */
  private numeric = false;
  /** Per pane start, its groups. */
  private readonly groups = new Map<number, PaneGroups>();
  /** The pane of the last record and its groups: records come in runs of one pane. */
  private lastPane = Number.NaN;
  private lastGroups: PaneGroups | undefined;
  private readonly spare: NumberPartials[] = [];
  private held = 0;

  override open(): void {
    const o = this.ctx.spec.options as {
      assigner: Exclude<WindowAssigner, { kind: 'session' }>;
      time: 'event' | 'processing';
    };
    this.slide = o.assigner.kind === 'sliding' ? o.assigner.slideMs : o.assigner.sizeMs;
    this.offset = o.assigner.offsetMs;
    this.processingTime = o.time === 'processing';
    this.agg = windowFunctionAccumulator(this);
    this.numeric = this.agg.numeric === true;
    this.keyOf = this.ctx.fns.keySelectors![0]!;
  }

  processElement(value: unknown, timestamp: number): void {
    try {
      const key = this.keyOf(value);
      const g = this.paneGroups(this.processingTime ? 0 : paneStart(timestamp, this.offset, this.slide));
      if (this.numeric && isInt32Key(key)) {
        const t = (g.numbers ??= this.spare.pop() ?? new NumberPartials());
        let e = t.find(key);
        if (e < 0) {
          e = t.append(key, this.agg.create() as number, timestamp);
          this.held++;
        } else if (timestamp > t.stamps[e]!) t.stamps[e] = timestamp;
        t.accs[e] = this.agg.add(t.accs[e], value, 0) as number;
        return;
      }
      const others = (g.others ??= new Map());
      const nk = normalizeKey(key);
      let e = others.get(nk);
      if (!e) {
        others.set(nk, (e = { key, acc: this.agg.create(), timestamp }));
        this.held++;
      } else if (timestamp > e.timestamp) e.timestamp = timestamp;
      e.acc = this.agg.add(e.acc, value, 0);
    } catch (err) {
      throw this.userError(err);
    }
  }

  private paneGroups(pane: number): PaneGroups {
    if (pane === this.lastPane) return this.lastGroups!;
    let g = this.groups.get(pane);
    if (!g) this.groups.set(pane, (g = { numbers: undefined, others: undefined }));
    this.lastPane = pane;
    return (this.lastGroups = g);
  }

  /** Send the groups of every pane whose last millisecond is at or before `time` (all: Infinity). */
  private flush(time = Infinity): void {
    if (this.held === 0) return;
    for (const [pane, g] of this.groups) {
      if (pane + this.slide - 1 > time) continue;
      const t = g.numbers;
      if (t) {
        for (let e = 0; e < t.size; e++) this.out.collect([t.keys[e], int32IfIntegral(t.accs[e]!)], t.stamps[e]!);
        this.held -= t.size;
        t.reset();
        if (this.spare.length < SPARE_TABLES) this.spare.push(t);
      }
      if (g.others) {
        for (const e of g.others.values()) this.out.collect([e.key, e.acc], e.timestamp);
        this.held -= g.others.size;
      }
      this.groups.delete(pane);
      if (pane === this.lastPane) this.forgetLastPane();
    }
  }

  private forgetLastPane(): void {
    this.lastPane = Number.NaN;
    this.lastGroups = undefined;
  }

  override endBatch(): void {
    // Groups of panes the watermark has passed (late records) leave at once, as they would unheld.
    if (this.held > HELD_GROUPS_LIMIT) this.flush();
    else if (!this.processingTime) this.flush(this.currentWatermark);
  }

  /**
   * The task is about to wait (for input, room or user work) or yield, and its writer sends partly
   * filled batches now (SubtaskRunner.beforeWait). In processing time groups are held while the task
   * runs: the writer holds a partly filled batch just as long, so they leave no later than their
   * records would have.
   */
  beforeWait(): void {
    if (this.processingTime) this.flush();
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
