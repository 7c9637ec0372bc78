/**
 * Sources over an index space (datagen rows, nexmark events): row r belongs to split r mod 128, and a
 * subtask owns a contiguous range of splits (as it would key groups). Its position is the next row of
 * each split it owns, so a restore at another parallelism hands each split, with its progress, to the
 * subtask that owns it now (docs/design/016-rescale.md). A subtask emits its rows in increasing order,
 * so after a rescale the splits that lag catch up first and event time stays ordered.
 */
import { KeyGroupRange, MAX_PARALLELISM } from '../plan/index.js';
import { ConnectorError } from '../errors.js';

export const INDEX_SPLITS = MAX_PARALLELISM;

/** A subtask's position: the next row of each split it owns, splits `from`, `from + 1`, ... */
export interface IndexSpacePosition {
  from: number;
  next: number[];
}

/** The first row at or after `row` that belongs to split `g`. */
function firstOf(g: number, row: number): number {
  return row + ((g - (row % INDEX_SPLITS) + INDEX_SPLITS) % INDEX_SPLITS);
}

export class IndexSpaceCursor {
  /** The splits owned, `first..last` inclusive (empty when first > last: a subtask past 128). */
  readonly first: number;
  readonly last: number;
  /** The next row to consider: no owned split has an unemitted row below it. */
  private row: number;
  /** Splits restored ahead of `row` (after a rescale): their next row, until `row` passes them all. */
  private ahead = new Map<number, number>();
  private aheadUntil = 0;

  constructor(subtaskIndex: number, parallelism: number) {
    const r = KeyGroupRange.forSubtask(subtaskIndex, parallelism, INDEX_SPLITS);
    this.first = r.start;
    this.last = r.end;
    this.row = this.first;
  }

  /** How many of the 128 splits this subtask owns (a rate is shared in this proportion). */
  get share(): number {
    return Math.max(0, this.last - this.first + 1) / INDEX_SPLITS;
  }

  /** Emit up to `max` rows below `end`, in increasing order; returns how many. */
  advance(max: number, end: number, emit: (row: number) => void): number {
    let n = 0;
    if (this.first > this.last) return 0;
    while (n < max && this.row < end) {
      const g = this.row % INDEX_SPLITS;
      if (g < this.first) this.row += this.first - g;
      else if (g > this.last) this.row += INDEX_SPLITS - g + this.first;
      if (this.row >= end) break;
      // The run of owned rows in this block of 128.
      const stop = Math.min(end, this.row - (this.row % INDEX_SPLITS) + this.last + 1, this.row + (max - n));
      if (this.ahead.size === 0) {
        for (let r = this.row; r < stop; r++) emit(r);
        n += stop - this.row;
      } else {
        for (let r = this.row; r < stop; r++) {
          const a = this.ahead.get(r % INDEX_SPLITS);
          if (a !== undefined && a > r) continue;
          emit(r);
          n++;
        }
        if (stop >= this.aheadUntil) this.ahead.clear();
      }
      this.row = stop;
    }
    return n;
  }

  /** True once every owned split has passed `end`. */
  done(end: number): boolean {
    if (this.first > this.last || this.row >= end) return true;
    // Every owned split has a row in the next block of 128: far from the end, one of them is below it.
    if (this.ahead.size === 0 && this.row + INDEX_SPLITS <= end) return false;
    return this.nextRows().every((r) => r >= end);
  }

  private nextRows(): number[] {
    const out: number[] = [];
    for (let g = this.first; g <= this.last; g++) out.push(Math.max(firstOf(g, this.row), this.ahead.get(g) ?? 0));
    return out;
  }

  snapshot(): IndexSpacePosition {
    return { from: this.first, next: this.nextRows() };
  }

  restore(position: unknown, what: string): void {
    const p = position as Partial<IndexSpacePosition> | undefined;
    if (!p || !Array.isArray(p.next) || typeof p.from !== 'number') {
      throw new ConnectorError(
        `${what}: the checkpoint's position ${JSON.stringify(position)} is not a split position (taken by an older clink?); start the job without restoring`,
      );
    }
    if (p.from !== this.first || p.next.length !== this.last - this.first + 1) {
      throw new ConnectorError(
        `${what}: the checkpoint's position covers splits ${p.from}..${p.from + p.next.length - 1}, this subtask owns ${this.first}..${this.last}`,
      );
    }
    this.ahead.clear();
    if (p.next.length === 0) return;
    this.row = Math.min(...p.next);
    p.next.forEach((r, i) => {
      if (r > firstOf(this.first + i, this.row)) this.ahead.set(this.first + i, r);
    });
    this.aheadUntil = Math.max(0, ...this.ahead.values());
  }
}

/** Divide the positions of the earlier subtasks among `parallelism` new ones: each split keeps its next row. */
export function rescaleIndexSpace(positions: readonly unknown[], parallelism: number): IndexSpacePosition[] {
  const next = new Map<number, number>();
  positions.forEach((position, i) => {
    const p = position as IndexSpacePosition | undefined;
    if (p) p.next.forEach((r, k) => next.set(p.from + k, r));
    else {
      // A subtask with no position had read nothing: its splits start at their first row.
      const fresh = new IndexSpaceCursor(i, positions.length).snapshot();
      fresh.next.forEach((r, k) => next.set(fresh.from + k, r));
    }
  });
  return Array.from({ length: parallelism }, (_, s) => {
    const c = new IndexSpaceCursor(s, parallelism);
    const out: number[] = [];
    for (let g = c.first; g <= c.last; g++) out.push(next.get(g) ?? g);
    return { from: c.first, next: out };
  });
}
