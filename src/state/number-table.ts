/**
 * A keyed table of numbers under 32-bit integer keys (a window's counts by auction or user id): per key
 * group, an open-addressing hash table of `[key, value]` pairs in one Float64Array (linear probing,
 * Fibonacci hashing, an empty slot's key NaN). An update finds its key in one probe run and writes the
 * value in place: no allocation, and about twice as fast as a Map's get and set at a million keys (the
 * pairs of a slot share a cache line; a Map's bucket and entry do not).
 *
 * Snapshots are copy-on-write per key group: the barrier only marks the non-empty groups; the first
 * access to a marked group before it is encoded copies its keys and values out as two columns (what
 * the encoder takes; a copy of the raw pairs cost twice the memory and a second pass), and each group
 * is encoded, in slices as a StateTable's, from those columns (group-codec.ts).
 * Keys are only added or updated, never removed one by one: a table is dropped whole, as a window pane
 * is once fired.
 */
import type { EncodedGroup } from './table.js';
import { decodeNumberGroup, encodeNumberGroup } from './group-codec.js';

/** A key a NumberTable holds: a 32-bit integer (-0 reads as 0, as a Map's key does). */
export const isNumberTableKey = (key: unknown): key is number => typeof key === 'number' && key === (key | 0);

const INITIAL_CAPACITY = 16;
/** Grow (double) past this share of slots taken: linear probing stays short below it. */
const MAX_LOAD = 0.6;

export class NumberGroup {
  /** Slot i's key at 2i (NaN: empty), its value at 2i + 1. */
  pairs = new Float64Array(2 * INITIAL_CAPACITY).fill(Number.NaN);
  /** Keys held. */
  size = 0;
  private mask = INITIAL_CAPACITY - 1;
  private shift = 32 - Math.log2(INITIAL_CAPACITY);

  /** The index in `pairs` of the key's value, or -1 when the key is not held. */
  indexOf(key: number): number {
    const p = this.pairs;
    for (let slot = Math.imul(key | 0, 0x9e3779b1) >>> this.shift; ; slot = (slot + 1) & this.mask) {
      const k = p[2 * slot]!;
      if (k === key) return 2 * slot + 1;
      if (k !== k) return -1;
    }
  }

  /** Add a key not held yet. */
  insert(key: number, value: number): void {
    if (this.size + 1 > MAX_LOAD * (this.mask + 1)) this.grow();
    this.place(key | 0, value);
    this.size++;
  }

  /** Set a key's value, adding the key when it is not held. */
  set(key: number, value: number): void {
    const at = this.indexOf(key);
    if (at >= 0) this.pairs[at] = value;
    else this.insert(key, value);
  }

  /** Hold no key, keeping the capacity (a group taken from a NumberGroupPool). */
  clear(): void {
    this.pairs.fill(Number.NaN);
    this.size = 0;
  }

  /** Every key and value, in slot order. */
  forEach(fn: (value: number, key: number) => void): void {
    const p = this.pairs;
    for (let i = 0; i < p.length; i += 2) if (p[i] === p[i]) fn(p[i + 1]!, p[i]!);
  }

  private place(key: number, value: number): void {
    const p = this.pairs;
    let slot = Math.imul(key, 0x9e3779b1) >>> this.shift;
    while (p[2 * slot] === p[2 * slot]) slot = (slot + 1) & this.mask;
    p[2 * slot] = key;
    p[2 * slot + 1] = value;
  }

  private grow(): void {
    const old = this.pairs;
    const capacity = 2 * (this.mask + 1);
    this.pairs = new Float64Array(2 * capacity).fill(Number.NaN);
    this.mask = capacity - 1;
    this.shift--;
    for (let i = 0; i < old.length; i += 2) if (old[i] === old[i]) this.place(old[i]!, old[i + 1]!);
  }
}

/** Spare groups kept per key group at most. */
const SPARE_GROUPS = 2;

/**
 * The groups of dropped tables, for the tables made after them: a window makes a pane every slide
 * and drops one, and each of its key groups holds about as many keys as the same group of the pane
 * before. A group taken from here starts with the room it grew to, so it neither allocates nor grows
 * (its rehashing was a seventh of q5's window stage). Bounded: SPARE_GROUPS per key group, none
 * holding 8 times more room than it had keys.
 */
export class NumberGroupPool {
  private readonly spare: (NumberGroup[] | undefined)[] = [];

  take(keyGroup: number): NumberGroup | undefined {
    const g = this.spare[keyGroup]?.pop();
    g?.clear();
    return g;
  }

  give(keyGroup: number, g: NumberGroup): void {
    const room = g.pairs.length / 2;
    if (room > INITIAL_CAPACITY && 8 * g.size < room) return;
    const s = (this.spare[keyGroup] ??= []);
    if (s.length < SPARE_GROUPS) s.push(g);
  }
}

type Columns = { keys: Int32Array; values: Float64Array };

/** What a snapshot captured at its barrier: per key group not encoded yet, the live group or its columns as they were. */
export class NumberCapture {
  readonly encoded: EncodedGroup[] = [];
  error: unknown = undefined;
  readonly pending = new Map<number, NumberGroup | Columns>();

  encode(keyGroup: number): void {
    const p = this.pending.get(keyGroup);
    if (!p) return;
    this.pending.delete(keyGroup);
    if (this.error !== undefined) return;
    try {
      const { keys, values } = p instanceof NumberGroup ? columnsOf(p.pairs) : p;
      this.encoded.push([keyGroup, encodeNumberGroup(keys, values)]);
    } catch (err) {
      this.error = err;
    }
  }
}

/** The held keys of a pairs array and their values, as two columns in slot order. */
function columnsOf(pairs: Float64Array): Columns {
  let n = 0;
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === pairs[i]) n++;
  const keys = new Int32Array(n);
  const values = new Float64Array(n);
  n = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    const k = pairs[i]!;
    if (k !== k) continue;
    keys[n] = k;
    values[n++] = pairs[i + 1]!;
  }
  return { keys, values };
}

export class NumberTable {
  readonly groups: (NumberGroup | undefined)[];
  /** The in-flight snapshot's capture, until every group it marked is encoded. */
  private capture: NumberCapture | undefined;

  constructor(
    maxParallelism: number,
    /** Where its groups come from when it makes them and go when it is dropped. */
    private readonly pool?: NumberGroupPool,
  ) {
    this.groups = new Array<NumberGroup | undefined>(maxParallelism);
  }

  /** The group of a key group, made when absent; every access that may write goes through here. */
  group(keyGroup: number): NumberGroup {
    const g = (this.groups[keyGroup] ??= this.pool?.take(keyGroup) ?? new NumberGroup());
    // First access since the barrier to a group not encoded yet: keep its keys and values as they were.
    if (this.capture !== undefined && this.capture.pending.get(keyGroup) === g)
      this.capture.pending.set(keyGroup, columnsOf(g.pairs));
    return g;
  }

  /** Number of keys, over all key groups. */
  get size(): number {
    let n = 0;
    for (const g of this.groups) n += g?.size ?? 0;
    return n;
  }

  beginSnapshot(): { capture: NumberCapture; keyGroups: number[] } {
    // A snapshot still encoding (checkpoints faster than state is written) finishes first, as a StateTable's does.
    const inFlight = this.capture;
    if (inFlight) for (const kg of [...inFlight.pending.keys()]) inFlight.encode(kg);
    const capture = new NumberCapture();
    const keyGroups: number[] = [];
    this.groups.forEach((g, kg) => {
      if (!g || g.size === 0) return;
      capture.pending.set(kg, g);
      keyGroups.push(kg);
    });
    this.capture = keyGroups.length > 0 ? capture : undefined;
    return { capture, keyGroups };
  }

  encodeCaptured(capture: NumberCapture, keyGroup: number): void {
    capture.encode(keyGroup);
  }

  /** The snapshot is fully encoded: stop copying groups for it. */
  endSnapshot(capture: NumberCapture): void {
    if (this.capture === capture) this.capture = undefined;
  }

  /**
   * The table is dropped: its groups go to the pool and it holds nothing after. Not while a snapshot
   * may still read them (its groups are then left as they are, for the snapshot, and not reused).
   */
  release(): void {
    const pool = this.pool;
    if (pool === undefined || this.capture !== undefined) return;
    this.groups.forEach((g, kg) => g && pool.give(kg, g));
    this.groups.fill(undefined);
  }

  /** Add a key group's entries from a snapshot (a key held already takes the snapshot's value). */
  loadGroup(keyGroup: number, [, entries]: EncodedGroup): void {
    const g = this.group(keyGroup);
    decodeNumberGroup(entries, (key, value) => g.set(key, value));
  }
}
