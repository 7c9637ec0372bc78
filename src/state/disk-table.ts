/**
 * A state table on disk (design record 024): its values in an LMDB database, keyed by key group and
 * key, with a bounded cache of decoded values in front.
 *
 * The cache is write-back and least-recently-used: a read brings a value in, a write changes it there,
 * and what changed reaches the store when it leaves the cache (evicted in chunks of a sixteenth, the
 * changed ones written in one transaction) or at a snapshot's barrier. A value read as an object counts
 * as changed (its reader may change it in place), unless the table's values are immutable.
 *
 * A snapshot writes back what the cache changed, then pins an LMDB read transaction: its key groups are
 * encoded from that view in slices while records go on writing, as the heap table's copy-on-write does.
 * A group is written as the store holds it, pairs of key and value bytes (group-codec.ts): nothing is
 * decoded and encoded again. Either backend restores the other's groups (decodeGroup reads both).
 */
import type { Database, Transaction } from 'lmdb';
import { Packr } from 'msgpackr';
import { WORKER_DEFAULTS } from '../config/index.js';
import { StateError } from '../errors.js';
import { decodePairs, encodePairs, isPairsGroup, statePackr } from './group-codec.js';
import type { DiskStorage } from './disk-storage.js';
import { decodeStoreKey, encodeStoreKey, keyGroupBounds, storeKeyAfter } from './key-codec.js';
import { decodeGroup, type EncodedGroup, type KeyedTable, type SnapshotCapture } from './table.js';

/** Decoded values per disk state and subtask the cache holds, at most (a worker's --state-cache-entries). */
export const DEFAULT_DISK_CACHE_ENTRIES: number = WORKER_DEFAULTS.stateCacheEntries;
/** Keys a live iteration of a group reads from the store at a time. */
const SCAN_CHUNK = 64;

/** statePackr's format; a decoded value never shares memory with the store's transient read buffer. */
const diskPackr = new Packr({ structuredClone: true, moreTypes: true, copyBuffers: true });

interface Cached<V> {
  keyGroup: number;
  /** undefined: the key has no value (deleted, or never had one). */
  value: V | undefined;
  /** Changed since the store last had it. */
  dirty: boolean;
  /** The store holds a value for the key. */
  stored: boolean;
}

class DiskCapture implements SnapshotCapture {
  readonly encoded: EncodedGroup[] = [];
  error: unknown = undefined;
  private released = false;

  constructor(
    readonly pending: Uint8Array,
    readonly view: Transaction,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.view.done();
  }
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null;

export class DiskStateTable<V> implements KeyedTable<V> {
  valuesImmutable = false;
  private readonly cache = new Map<unknown, Cached<V>>();
  /** Keys with a value, per key group (the store's and the cache's together). */
  private readonly counts: Int32Array;
  private total = 0;
  private capture: DiskCapture | undefined;

  constructor(
    /** The state, as errors name it: "state 'x' of operator 'y'". */
    private readonly what: string,
    private readonly storage: DiskStorage,
    private readonly db: Database<Buffer, Buffer>,
    maxParallelism: number,
    private readonly capacity = DEFAULT_DISK_CACHE_ENTRIES,
  ) {
    this.counts = new Int32Array(maxParallelism);
  }

  get size(): number {
    return this.total;
  }

  get keyGroupCount(): number {
    return this.counts.length;
  }

  get(keyGroup: number, key: unknown): V | undefined {
    let e = this.cache.get(key);
    if (e !== undefined) this.touch(key, e);
    else {
      const bytes = this.db.getBinaryFast(encodeStoreKey(keyGroup, key));
      const value = bytes === undefined ? undefined : (diskPackr.unpack(bytes) as V);
      e = { keyGroup, value, dirty: false, stored: bytes !== undefined };
      this.insert(key, e);
    }
    if (!this.valuesImmutable && isObject(e.value)) e.dirty = true;
    return e.value;
  }

  set(keyGroup: number, key: unknown, value: V): void {
    const [e, present] = this.entry(keyGroup, key);
    if (!present) this.count(keyGroup, 1);
    e.value = value;
    e.dirty = true;
  }

  delete(keyGroup: number, key: unknown): void {
    const [e, present] = this.entry(keyGroup, key);
    if (!present) return;
    this.count(keyGroup, -1);
    e.value = undefined;
    e.dirty = e.stored;
  }

  /**
   * The cached entry of `key` for a write, and whether the key has a value now. A miss asks the store
   * whether it holds one, without decoding it: the caller replaces or removes it.
   */
  private entry(keyGroup: number, key: unknown): [Cached<V>, boolean] {
    const e = this.cache.get(key);
    if (e !== undefined) {
      this.touch(key, e);
      return [e, e.value !== undefined];
    }
    const stored = this.db.doesExist(encodeStoreKey(keyGroup, key));
    const fresh: Cached<V> = { keyGroup, value: undefined, dirty: false, stored };
    this.insert(key, fresh);
    return [fresh, stored];
  }

  private count(keyGroup: number, by: number): void {
    this.counts[keyGroup]! += by;
    this.total += by;
  }

  /** Most recently used last: the Map's order is the eviction order. */
  private touch(key: unknown, e: Cached<V>): void {
    this.cache.delete(key);
    this.cache.set(key, e);
  }

  private insert(key: unknown, e: Cached<V>): void {
    this.cache.set(key, e);
    if (this.cache.size > this.capacity) this.evict();
  }

  /** Evict the least recently used sixteenth, writing back what of it changed. */
  private evict(): void {
    const victims: [unknown, Cached<V>][] = [];
    const n = Math.max(1, this.capacity >> 4);
    for (const kv of this.cache) {
      if (victims.length >= n) break;
      victims.push(kv);
    }
    this.writeBack(victims);
    for (const [key] of victims) this.cache.delete(key);
  }

  /**
   * Write the changed entries among `entries` to the store, in one transaction. Every value is encoded
   * first: one that cannot be fails the write with nothing written, and stays changed in the cache.
   */
  private writeBack(entries: Iterable<[unknown, Cached<V>]>): void {
    const changed: [Buffer, Buffer | undefined, Cached<V>][] = [];
    for (const [key, e] of entries) {
      if (!e.dirty) continue;
      let bytes: Buffer | undefined;
      try {
        bytes = e.value === undefined ? undefined : statePackr.pack(e.value);
      } catch (err) {
        throw new StateError(`${this.what} cannot be stored: ${(err as Error).message}`, { cause: err });
      }
      changed.push([encodeStoreKey(e.keyGroup, key), bytes, e]);
    }
    if (changed.length === 0) return;
    this.storage.write(() => {
      for (const [k, bytes] of changed) {
        if (bytes === undefined) this.db.removeSync(k);
        else this.db.putSync(k, bytes);
      }
    });
    for (const [, bytes, e] of changed) {
      e.stored = bytes !== undefined;
      e.dirty = false;
    }
  }

  entriesOf(keyGroup: number): Iterator<[unknown, V]> | undefined {
    return this.counts[keyGroup] === 0 ? undefined : this.scan(keyGroup);
  }

  /**
   * A group's entries, read from the store a chunk at a time, each as the cache has it when it holds the
   * key. Keys only the cache holds are not visited; they reach the store, and later rounds, when it
   * writes them back.
   */
  private *scan(keyGroup: number): Generator<[unknown, V]> {
    const [start, end] = keyGroupBounds(keyGroup);
    let from = start;
    for (;;) {
      const chunk: [unknown, V | undefined][] = [];
      let last: Buffer | undefined;
      for (const { key, value } of this.db.getRange({ start: from, end, limit: SCAN_CHUNK })) {
        const k = decodeStoreKey(key);
        const cached = this.cache.get(k);
        chunk.push([k, cached ? cached.value : (diskPackr.unpack(value) as V)]);
        last = key;
      }
      for (const [k, v] of chunk) if (v !== undefined) yield [k, v];
      if (chunk.length < SCAN_CHUNK || last === undefined) return;
      from = storeKeyAfter(last);
    }
  }

  beginSnapshot(): { capture: SnapshotCapture; keyGroups: number[] } {
    this.finishSnapshot();
    this.writeBack(this.cache);
    const pending = new Uint8Array(this.counts.length);
    const keyGroups: number[] = [];
    this.counts.forEach((n, kg) => {
      if (n > 0) {
        pending[kg] = 1;
        keyGroups.push(kg);
      }
    });
    const capture = new DiskCapture(pending, this.db.useReadTransaction());
    if (keyGroups.length > 0) this.capture = capture;
    else capture.release();
    return { capture, keyGroups };
  }

  encodeCaptured(capture: SnapshotCapture, keyGroup: number): void {
    const c = capture as DiskCapture;
    if (c.pending[keyGroup] === 0) return;
    c.pending[keyGroup] = 0;
    if (c.error !== undefined) return;
    try {
      const [start, end] = keyGroupBounds(keyGroup);
      const pairs: [Uint8Array, Uint8Array][] = [];
      for (const { key, value } of this.db.getRange({ start, end, transaction: c.view })) pairs.push([key, value]);
      c.encoded.push([keyGroup, encodePairs(pairs)]);
    } catch (err) {
      c.error = err;
    }
  }

  finishSnapshot(): void {
    const c = this.capture;
    if (!c) return;
    for (let kg = 0; kg < c.pending.length; kg++) this.encodeCaptured(c, kg);
    this.endSnapshot(c);
  }

  /** The store is closing: a snapshot in flight fails instead of reading it. */
  close(): void {
    const c = this.capture;
    if (!c) return;
    c.error ??= new StateError(`${this.what} was closed while a snapshot of it was being written`);
    this.endSnapshot(c);
  }

  endSnapshot(capture: SnapshotCapture): void {
    (capture as DiskCapture).release();
    if (this.capture === capture) this.capture = undefined;
  }

  loadGroup(keyGroup: number, group: EncodedGroup): void {
    const [, entries, atBarrier] = group;
    const merge = this.counts[keyGroup]! > 0;
    // A disk table's group goes back into the store as it was read from one.
    if (isPairsGroup(entries) && !atBarrier) {
      this.storage.write(() =>
        decodePairs(entries, (k, v) => {
          const key = decodeStoreKey(k);
          this.cache.delete(key);
          if (!(merge && this.db.doesExist(k as Buffer))) this.count(keyGroup, 1);
          this.db.putSync(k as Buffer, v as Buffer);
        }),
      );
      return;
    }
    const decoded = decodeGroup<V | undefined>(group);
    // Cached values of these keys are older than the snapshot's: the store takes the snapshot's.
    for (const k of decoded.keys()) this.cache.delete(k);
    this.storage.write(() => {
      for (const [key, v] of decoded) {
        const k = encodeStoreKey(keyGroup, key);
        const had = merge && this.db.doesExist(k);
        if (v === undefined) {
          if (had && this.db.removeSync(k)) this.count(keyGroup, -1);
        } else {
          this.db.putSync(k, statePackr.pack(v));
          if (!had) this.count(keyGroup, 1);
        }
      }
    });
  }
}
