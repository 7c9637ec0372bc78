/**
 * The accumulators of one window pane: keyed tables (key group, normalized key -> value) in the backend,
 * snapshotted with the rest of the keyed state.
 *
 * A numeric accumulator (a count) of a 32-bit integer key lives in a NumberTable: an open-addressing
 * table of numbers per key group, so an update writes a number in place and a checkpoint writes
 * columns (a `{ key, keyGroup, acc }` object per update made a checkpoint of a 1 M-key window cost 42%
 * of throughput). Everything else is in a StateTable: another primitive key's accumulator alone (its
 * normalized form is the key), an object or array key's as `{ key, acc }` (its original cannot be read
 * back from the normalized form); where an entry is follows from its normalized key alone.
 */
import { isObjectKey } from '../../plan/index.js';
import {
  isNumberTableKey,
  type KeyedStateBackend,
  type NumberGroup,
  type NumberTable,
  type StateTable,
} from '../../state/index.js';
import type { WindowAccumulator } from './window-accumulators.js';

/** A pane's tables: its window start follows the prefix. */
export const PANE_PREFIX = '__window-pane:';
export const paneName = (start: number): string => `${PANE_PREFIX}${start}`;
export const NUMBER_PANE_PREFIX = '__window-numbers:';
export const numberPaneName = (start: number): string => `${NUMBER_PANE_PREFIX}${start}`;
/** Panes as snapshots before this layout hold them (every entry `{ key, keyGroup, acc }`). */
export const LEGACY_PANE_PREFIX = '__pane:';

/** The starts of the panes (or slices) a backend holds under a table prefix and a table-of-numbers prefix. */
export function paneStarts(backend: KeyedStateBackend, prefix: string, numberPrefix: string): Set<number> {
  return new Set([
    ...backend.internalTables<unknown>(prefix).map(([name]) => Number(name.slice(prefix.length))),
    ...backend.internalNumberTables(numberPrefix).map(([name]) => Number(name.slice(numberPrefix.length))),
  ]);
}

const mod = (x: number, m: number): number => ((x % m) + m) % m;
/** The start of the last slide-aligned pane holding `ts` (for a tumbling window, its window). */
export const paneStart = (ts: number, offset: number, slide: number): number => ts - mod(ts - offset, slide);

interface BoxedAccumulator {
  key: unknown;
  acc: unknown;
}

export class Pane {
  /** `numbers`: the table of a numeric accumulator's 32-bit integer keys (undefined: the accumulator is not numeric). */
  constructor(
    private readonly table: StateTable<unknown>,
    private readonly numbers: NumberTable | undefined,
    private readonly agg: WindowAccumulator,
  ) {
    // Entries of an immutable accumulator are replaced, never changed, so a snapshot can keep the old one.
    table.valuesImmutable = agg.immutable === true;
  }

  /** Add a record to the accumulator of one key; returns the accumulator after it. */
  add(keyGroup: number, normalizedKey: unknown, key: unknown, value: unknown, input: number): unknown {
    if (this.numbers !== undefined && isNumberTableKey(normalizedKey)) {
      const g = this.numbers.group(keyGroup);
      const at = g.indexOf(normalizedKey);
      if (at < 0) {
        const created = this.agg.add(this.agg.create(), value, input) as number;
        g.insert(normalizedKey, created);
        return created;
      }
      return (g.pairs[at] = this.agg.add(g.pairs[at], value, input) as number);
    }
    const t = this.table;
    const held = t.get(keyGroup, normalizedKey);
    const present = held !== undefined || t.groups[keyGroup]?.has(normalizedKey) === true;
    if (isObjectKey(normalizedKey)) {
      if (!present) {
        const acc = this.agg.add(this.agg.create(), value, input);
        t.set(keyGroup, normalizedKey, { key, acc } satisfies BoxedAccumulator);
        return acc;
      }
      const box = held as BoxedAccumulator;
      const acc = this.agg.add(box.acc, value, input);
      if (t.valuesImmutable) t.set(keyGroup, normalizedKey, { key: box.key, acc } satisfies BoxedAccumulator);
      else box.acc = acc;
      return acc;
    }
    const acc = this.agg.add(present ? held : this.agg.create(), value, input);
    // A mutable accumulator changed in place is already there (get() kept the barrier's copy).
    if (!present || acc !== held) t.set(keyGroup, normalizedKey, acc);
    return acc;
  }

  /** Every key's accumulator, by key group. */
  forEach(fn: (acc: unknown, key: unknown, normalizedKey: unknown, keyGroup: number) => void): void {
    const groups = this.table.groups;
    const numberGroups = this.numbers?.groups;
    for (let kg = 0; kg < groups.length; kg++) {
      const n = numberGroups?.[kg];
      n?.forEach((acc, key) => fn(acc, key, key, kg));
      if (groups[kg]) this.forEachOtherInGroup(kg, (acc, key, nk) => fn(acc, key, nk, kg));
    }
  }

  /** The numbers of one key group (a numeric accumulator's integer keys), if it holds any. */
  numberGroup(keyGroup: number): NumberGroup | undefined {
    return this.numbers?.groups[keyGroup];
  }

  /** Every accumulator of one key group that is not in the numbers (other keys; every key of other accumulators). */
  forEachOtherInGroup(keyGroup: number, fn: (acc: unknown, key: unknown, normalizedKey: unknown) => void): void {
    const g = this.table.groups[keyGroup];
    if (!g) return;
    for (const [nk, v] of g) {
      if (isObjectKey(nk)) fn((v as BoxedAccumulator).acc, (v as BoxedAccumulator).key, nk);
      else fn(v, nk, nk);
    }
  }

  /** One key's accumulator (undefined: the pane holds none). */
  get(keyGroup: number, normalizedKey: unknown): unknown {
    if (this.numbers !== undefined && isNumberTableKey(normalizedKey)) {
      const g = this.numbers.groups[keyGroup];
      const at = g === undefined ? -1 : g.indexOf(normalizedKey);
      return at < 0 ? undefined : g!.pairs[at];
    }
    const v = this.table.get(keyGroup, normalizedKey);
    return v !== undefined && isObjectKey(normalizedKey) ? (v as BoxedAccumulator).acc : v;
  }

  /** Move a numeric accumulator's integer keys from the StateTable (where snapshots before NumberTable hold them) into the NumberTable. */
  moveIntegerKeysToNumbers(): void {
    const numbers = this.numbers;
    if (numbers === undefined) return;
    this.table.groups.forEach((g, kg) => {
      if (!g) return;
      for (const [nk, acc] of g) {
        if (!isNumberTableKey(nk)) continue;
        numbers.group(kg).set(nk, acc as number);
        g.delete(nk);
      }
    });
  }

  /** Keys with an accumulator. */
  get size(): number {
    return this.table.size + (this.numbers?.size ?? 0);
  }
}

/** Copy a pane restored in the layout before this one into a table of today's. */
export function convertLegacyPane(legacy: StateTable<unknown>, into: StateTable<unknown>): void {
  legacy.groups.forEach((g, kg) => {
    if (!g) return;
    for (const [nk, v] of g) {
      const { key, acc } = v as { key: unknown; acc: unknown };
      into.set(kg, nk, isObjectKey(nk) ? ({ key, acc } satisfies BoxedAccumulator) : acc);
    }
  });
}
