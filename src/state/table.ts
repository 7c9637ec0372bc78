/**
 * A heap state table: one Map per key group, snapshotted copy-on-write (see backend.ts). Until its group
 * is encoded, the first write to a key saves the value it had at the barrier, and the first read of an
 * object saves a copy (its reader may change it in place).
 */
import { decodePairs, isPairsGroup, statePackr } from './group-codec.js';
import { decodeStoreKey } from './key-codec.js';

/**
 * A group's entries, whichever backend wrote it (a Map through statePackr, or a disk table's pairs),
 * with its barrier values put back (undefined: the key had none then).
 */
export function decodeGroup<V>([, entries, atBarrier]: EncodedGroup): Map<unknown, V> {
  let decoded: Map<unknown, V>;
  if (isPairsGroup(entries)) {
    decoded = new Map();
    decodePairs(entries, (k, v) => decoded.set(decodeStoreKey(k), statePackr.unpack(v) as V));
  } else decoded = statePackr.unpack(entries) as Map<unknown, V>;
  if (atBarrier) for (const [k, v] of statePackr.unpack(atBarrier) as Map<unknown, V>) decoded.set(k, v);
  return decoded;
}

/**
 * One key group of one table in a snapshot: its entries when they were encoded and, for the keys
 * changed between the barrier and then, their values at the barrier (undefined: the key had none).
 */
export type EncodedGroup = [keyGroup: number, entries: Uint8Array, atBarrier?: Uint8Array];

/** What a snapshot of a table holds once its captured groups are encoded. */
export interface SnapshotCapture {
  readonly encoded: EncodedGroup[];
  error: unknown;
}

/**
 * A table of keyed values, per key group: what handles, TTL and snapshots use of a state, whether it
 * lives on the heap (StateTable) or on disk (DiskStateTable).
 */
export interface KeyedTable<V> {
  /** Set by the engine's own operators, which replace values and never change one in place. */
  valuesImmutable: boolean;
  get(keyGroup: number, key: unknown): V | undefined;
  set(keyGroup: number, key: unknown, value: V): void;
  delete(keyGroup: number, key: unknown): void;
  /** Number of keys with a value, over all key groups. */
  readonly size: number;
  readonly keyGroupCount: number;
  /**
   * The entries of one key group, read as the iteration goes (a key removed behind it is not visited
   * again); undefined when the group holds none.
   */
  entriesOf(keyGroup: number): Iterator<[unknown, V]> | undefined;
  /** Capture every non-empty group for a snapshot; returns the key groups to encode. */
  beginSnapshot(): { capture: SnapshotCapture; keyGroups: number[] };
  /** Encode one captured group (the snapshot's slices call this). */
  encodeCaptured(capture: SnapshotCapture, keyGroup: number): void;
  /** Encode what the in-flight snapshot has left, now. */
  finishSnapshot(): void;
  /** The snapshot's capture is fully encoded: let it go. */
  endSnapshot(capture: SnapshotCapture): void;
  /** Add a key group's entries from a snapshot: as encoded, then the barrier values put back. */
  loadGroup(keyGroup: number, group: EncodedGroup): void;
}

/** What a table's in-flight snapshot has captured and not encoded yet. */
export class TableCapture implements SnapshotCapture {
  readonly encoded: EncodedGroup[] = [];
  error: unknown = undefined;
  /** Per key group: captured and not yet encoded. */
  readonly pending: Uint8Array;
  /** Per key group: the barrier values of keys changed since (undefined value: absent then). */
  readonly atBarrier: (Map<unknown, unknown> | undefined)[];

  constructor(maxParallelism: number) {
    this.pending = new Uint8Array(maxParallelism);
    this.atBarrier = new Array<Map<unknown, unknown> | undefined>(maxParallelism);
  }

  /** Encode one captured group as it is now, with the barrier values of what changed, and let it go. */
  encode(keyGroup: number, live: Map<unknown, unknown> | undefined): void {
    if (this.pending[keyGroup] === 0) return;
    this.pending[keyGroup] = 0;
    const saved = this.atBarrier[keyGroup];
    this.atBarrier[keyGroup] = undefined;
    if (this.error !== undefined) return;
    try {
      const entries = statePackr.pack(live ?? new Map());
      this.encoded.push(saved ? [keyGroup, entries, statePackr.pack(saved)] : [keyGroup, entries]);
    } catch (err) {
      this.error = err;
    }
  }

  /**
   * Keep the barrier value of `key` unless an earlier change already kept it; `copy` keeps a deep copy
   * (an object its reader may change in place), made only when it is kept.
   */
  save(keyGroup: number, key: unknown, value: unknown, copy = false): void {
    let m = this.atBarrier[keyGroup];
    if (!m) this.atBarrier[keyGroup] = m = new Map();
    if (!m.has(key)) m.set(key, copy ? structuredClone(value) : value);
  }
}

export class StateTable<V> implements KeyedTable<V> {
  readonly groups: (Map<unknown, V> | undefined)[];
  /** The in-flight snapshot's capture, until every captured group is encoded. */
  private capture: TableCapture | undefined;
  /** Set by the engine's own operators, which replace values and never change one in place. */
  valuesImmutable = false;

  constructor(maxParallelism: number) {
    this.groups = new Array<Map<unknown, V> | undefined>(maxParallelism);
  }

  get(keyGroup: number, key: unknown): V | undefined {
    const v = this.groups[keyGroup]?.get(key);
    // Its reader may change an object in place: the capture keeps a copy of the barrier's.
    if (this.capture?.pending[keyGroup] && typeof v === 'object' && v !== null && !this.valuesImmutable)
      this.capture.save(keyGroup, key, v, true);
    return v;
  }

  set(keyGroup: number, key: unknown, value: V): void {
    let g = this.groups[keyGroup];
    if (this.capture?.pending[keyGroup]) this.capture.save(keyGroup, key, g?.get(key));
    if (!g) this.groups[keyGroup] = g = new Map();
    g.set(key, value);
  }

  delete(keyGroup: number, key: unknown): void {
    const g = this.groups[keyGroup];
    if (this.capture?.pending[keyGroup]) this.capture.save(keyGroup, key, g?.get(key));
    g?.delete(key);
  }

  /** Number of keys with a value, over all key groups. */
  get size(): number {
    let n = 0;
    for (const g of this.groups) n += g?.size ?? 0;
    return n;
  }

  get keyGroupCount(): number {
    return this.groups.length;
  }

  entriesOf(keyGroup: number): Iterator<[unknown, V]> | undefined {
    const g = this.groups[keyGroup];
    // Removing the key just visited is safe: a Map's iterator goes on past deletions.
    return g === undefined || g.size === 0 ? undefined : g.entries();
  }

  /** Capture every non-empty group for a snapshot; returns the key groups to encode. */
  beginSnapshot(): { capture: TableCapture; keyGroups: number[] } {
    this.finishSnapshot();
    const capture = new TableCapture(this.groups.length);
    const keyGroups: number[] = [];
    this.groups.forEach((g, kg) => {
      if (g && g.size > 0) {
        capture.pending[kg] = 1;
        keyGroups.push(kg);
      }
    });
    if (keyGroups.length > 0) this.capture = capture;
    return { capture, keyGroups };
  }

  /** Encode one captured group (the snapshot's slices call this). */
  encodeCaptured(capture: SnapshotCapture, keyGroup: number): void {
    (capture as TableCapture).encode(keyGroup, this.groups[keyGroup] as Map<unknown, unknown> | undefined);
  }

  /**
   * Encode what the in-flight snapshot has left, now. Only a snapshot that starts before the last one
   * finished encoding pays this (checkpoints faster than the state can be written).
   */
  finishSnapshot(): void {
    const c = this.capture;
    if (!c) return;
    for (let kg = 0; kg < c.pending.length; kg++) this.encodeCaptured(c, kg);
    this.capture = undefined;
  }

  /** The snapshot's capture is fully encoded: stop saving barrier values for it. */
  endSnapshot(capture: SnapshotCapture): void {
    if (this.capture === capture) this.capture = undefined;
  }

  /** Add a key group's entries from a snapshot: as encoded, then the barrier values put back. */
  loadGroup(keyGroup: number, group: EncodedGroup): void {
    const decoded = decodeGroup<V | undefined>(group);
    let g = this.groups[keyGroup];
    // A group this table does not hold yet is the decoded Map itself: no second Map of millions of keys.
    if (!g) {
      this.groups[keyGroup] = g = decoded as Map<unknown, V>;
      if (!group[2]) return;
      for (const [k, v] of decoded) if (v === undefined) g.delete(k);
      return;
    }
    for (const [k, v] of decoded) {
      if (v === undefined) g.delete(k);
      else g.set(k, v);
    }
  }
}
