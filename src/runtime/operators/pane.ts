/**
 * The accumulators of one window pane: a keyed state table (key group, normalized key -> value) in the
 * backend, snapshotted copy-on-write with the rest of the keyed state.
 *
 * A key that stands for itself (a primitive: its normalized form is the key) stores its accumulator
 * alone, so a count over a million keys is a million numbers in the table and in a checkpoint, not a
 * million `{ key, keyGroup, acc }` objects rebuilt on every update (that layout made a checkpoint of a
 * 1 M-key window cost 42% of throughput). An object or array key stores `{ key, acc }`: its original
 * cannot be read back from the normalized form. Which of the two an entry is follows from its
 * normalized key alone, so nothing else is stored.
 */
import { isObjectKey } from '../../plan/index.js';
import type { StateTable } from '../../state/index.js';
import type { WindowAccumulator } from './window.js';

/** A pane's table: its window start follows the prefix. */
export const PANE_PREFIX = '__window-pane:';
export const paneName = (start: number): string => `${PANE_PREFIX}${start}`;
/** Panes as snapshots before this layout hold them (every entry `{ key, keyGroup, acc }`). */
export const LEGACY_PANE_PREFIX = '__pane:';

interface BoxedAccumulator {
  key: unknown;
  acc: unknown;
}

export class Pane {
  constructor(
    private readonly table: StateTable<unknown>,
    private readonly agg: WindowAccumulator,
  ) {
    // Entries of an immutable accumulator are replaced, never changed, so a snapshot can keep the old one.
    table.valuesImmutable = agg.immutable === true;
  }

  /** Add a record to the accumulator of one key; returns the accumulator after it. */
  add(keyGroup: number, normalizedKey: unknown, key: unknown, value: unknown, input: number): unknown {
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
    for (let kg = 0; kg < groups.length; kg++) {
      const g = groups[kg];
      if (!g) continue;
      for (const [nk, v] of g) {
        if (isObjectKey(nk)) fn((v as BoxedAccumulator).acc, (v as BoxedAccumulator).key, nk, kg);
        else fn(v, nk, nk, kg);
      }
    }
  }

  /** Keys with an accumulator. */
  get size(): number {
    return this.table.size;
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
