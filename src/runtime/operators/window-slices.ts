/**
 * Slices of a sliding window (design record 020): a record, or a pre-aggregated partial, is added once,
 * to the slide-long slice holding its timestamp, instead of once to each of the size/slide windows it
 * belongs to; a window, when it fires, combines its slices' accumulators per key. A window of 10 s
 * sliding by 2 s did five table updates per partial; at parallelism 2 each auction's partials come from
 * both pre-aggregations, so q5's windows did ten per auction and slice, and now two.
 *
 * Used for numeric accumulators (counts) whose size is a whole number of slides: merging two numbers
 * is cheap and order-free, where merging lists (process windows) would change the order a function
 * sees its elements in. A slice is a Pane under its own table names, so a snapshot holds slices, and a
 * snapshot of the per-window layout restores as whole windows the slices add to (window.ts).
 */
import { NumberGroup, type KeyedStateBackend } from '../../state/index.js';
import { Pane, paneStarts } from './pane.js';
import type { WindowAccumulator } from './window-accumulators.js';

export const SLICE_PREFIX = '__window-slice:';
export const NUMBER_SLICE_PREFIX = '__window-slice-numbers:';
const sliceName = (start: number): string => `${SLICE_PREFIX}${start}`;
const numberSliceName = (start: number): string => `${NUMBER_SLICE_PREFIX}${start}`;

/** Whether a window of `size` sliding by `slide` with this accumulator is kept in slices. */
export const sliceable = (agg: WindowAccumulator, size: number, slide: number): boolean =>
  agg.numeric === true && slide < size && size % slide === 0;

/** Emits one key's accumulator of a window. */
export type WindowEntry = (acc: unknown, key: unknown, normalizedKey: unknown, keyGroup: number) => void;

export class WindowSlices {
  /** Slice start -> its pane. */
  private readonly slices = new Map<number, Pane>();
  /** Reused to combine a key group's counts over a window's slices. */
  private readonly scratch = new NumberGroup();

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly agg: WindowAccumulator,
    private readonly sizeMs: number,
    private readonly slideMs: number,
  ) {}

  /** The slice starting at `start`, if it holds anything. */
  get(start: number): Pane | undefined {
    return this.slices.get(start);
  }

  /** The slice starting at `start`, made when absent. */
  at(start: number): Pane {
    let s = this.slices.get(start);
    if (!s)
      this.slices.set(
        start,
        (s = new Pane(
          this.backend.internalTable(sliceName(start)),
          this.backend.internalNumberTable(numberSliceName(start)),
          this.agg,
        )),
      );
    return s;
  }

  /** Drop every slice no window past `time` holds: slice t is last in the window starting at t. */
  dropUpTo(time: number, lateness: number): void {
    for (const start of this.slices.keys()) if (start + this.sizeMs - 1 + lateness <= time) this.drop(start);
  }

  private drop(start: number): void {
    this.slices.delete(start);
    this.backend.dropInternalTable(sliceName(start));
    this.backend.dropInternalTable(numberSliceName(start));
  }

  /** The slices of the window starting at `start`, oldest first. */
  private of(windowStart: number): Pane[] {
    const out: Pane[] = [];
    for (let t = windowStart; t < windowStart + this.sizeMs; t += this.slideMs) {
      const s = this.slices.get(t);
      if (s) out.push(s);
    }
    return out;
  }

  /**
   * Every key's accumulator over the window starting at `start`, by key group: its slices' merged,
   * with `whole` (the window as restored from a snapshot of the per-window layout) merged in.
   */
  forEachInWindow(start: number, whole: Pane | undefined, fn: WindowEntry): void {
    const panes = this.of(start);
    if (whole) panes.push(whole);
    if (panes.length === 1) return panes[0]!.forEach(fn);
    const merge = this.agg.merge;
    const scratch = this.scratch;
    const others = new Map<unknown, { acc: unknown; key: unknown }>();
    for (let kg = 0; kg < this.backend.maxParallelism; kg++) {
      let groups = 0;
      let only: NumberGroup | undefined;
      for (const p of panes) {
        const g = p.numberGroup(kg);
        if (g === undefined || g.size === 0) continue;
        if (groups++ === 0) only = g;
        else {
          if (groups === 2) {
            scratch.clear();
            only!.forEach((v, k) => scratch.insert(k, v));
          }
          g.forEach((v, k) => {
            const at = scratch.indexOf(k);
            if (at < 0) scratch.insert(k, v);
            else scratch.pairs[at] = merge(scratch.pairs[at], v) as number;
          });
        }
      }
      if (groups === 1) only!.forEach((v, k) => fn(v, k, k, kg));
      else if (groups > 1) scratch.forEach((v, k) => fn(v, k, k, kg));
      for (const p of panes) {
        p.forEachOtherInGroup(kg, (acc, key, nk) => {
          const held = others.get(nk);
          if (held) held.acc = merge(held.acc, acc);
          else others.set(nk, { acc, key });
        });
      }
      if (others.size === 0) continue;
      for (const [nk, { acc, key }] of others) fn(acc, key, nk, kg);
      others.clear();
    }
  }

  /** One key's accumulator over the window starting at `start` (undefined: the window holds none). */
  keyInWindow(start: number, whole: Pane | undefined, keyGroup: number, normalizedKey: unknown): unknown {
    let acc: unknown = undefined;
    const panes = this.of(start);
    if (whole) panes.push(whole);
    for (const p of panes) {
      const a = p.get(keyGroup, normalizedKey);
      if (a !== undefined) acc = acc === undefined ? a : this.agg.merge(acc, a);
    }
    return acc;
  }

  /** After a restore: index the slices the backend holds (only this subtask's key groups); empty ones are dropped. */
  restore(): void {
    for (const start of paneStarts(this.backend, SLICE_PREFIX, NUMBER_SLICE_PREFIX))
      if (this.at(start).size === 0) this.drop(start);
  }

  /** Keys with an accumulator, over all slices. */
  get size(): number {
    let n = 0;
    for (const s of this.slices.values()) n += s.size;
    return n;
  }
}
