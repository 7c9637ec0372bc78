/**
 * Heap keyed state, partitioned by key group: each named state is a table of per-key-group maps, so a
 * snapshot or a rescale moves whole key groups. Handles read the backend's current key on every call.
 *
 * Snapshots are copy-on-write, per entry. At the barrier a snapshot only marks the non-empty groups as
 * captured (O(key groups)); it then encodes them (msgpackr, one group at a time) in slices between which
 * the event loop runs. Until its group is encoded, the first write to a key saves the value it had at
 * the barrier, and the first read of an object saves a copy (its reader may change it in place). A group
 * is stored as its entries when encoded plus those saved values, which a restore puts back: records keep
 * flowing at O(1) extra cost each, and nothing is copied in bulk.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { StateError } from '../errors.js';
import { keyGroupOf, MAX_PARALLELISM, normalizeKey, type KeyGroupRange } from '../plan/index.js';
import type { KeyedStateStore, ListState, MapState, StateOptions, ValueState } from '../sdk/index.js';
import { statePackr } from './group-codec.js';
import { ListStateHandle, MapStateHandle, ValueStateHandle } from './handles.js';
import { NumberGroupPool, NumberTable, type NumberCapture } from './number-table.js';
import { TtlClock, TtlListState, TtlMapState, TtlValueState, ttlPolicyOf, type TtlPolicy } from './ttl.js';

const INTERNAL = 'internal';
/** The engine's tables of numbers (window counts): NumberTable. */
const INTERNAL_NUMBERS = 'internal-numbers';
const isInternal = (kind: string): boolean => kind === INTERNAL || kind === INTERNAL_NUMBERS;
const INTERNAL_PREFIX = '__';

/** How long an encoding slice may run before the event loop gets a turn. @default 8 */
export const SNAPSHOT_SLICE_MS = 8;

/**
 * One key group of one table in a snapshot: its entries when they were encoded and, for the keys
 * changed between the barrier and then, their values at the barrier (undefined: the key had none).
 */
export type EncodedGroup = [keyGroup: number, entries: Uint8Array, atBarrier?: Uint8Array];

/** What a table's in-flight snapshot has captured and not encoded yet. */
class TableCapture {
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

export class StateTable<V> {
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
  encodeCaptured(capture: TableCapture, keyGroup: number): void {
    capture.encode(keyGroup, this.groups[keyGroup] as Map<unknown, unknown> | undefined);
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
  endSnapshot(capture: TableCapture): void {
    if (this.capture === capture) this.capture = undefined;
  }

  /** Add a key group's entries from a snapshot: as encoded, then the barrier values put back. */
  loadGroup(keyGroup: number, [, entries, atBarrier]: EncodedGroup): void {
    const decoded = statePackr.unpack(entries) as Map<unknown, V>;
    let g = this.groups[keyGroup];
    // A group this table does not hold yet is the decoded Map itself: no second Map of millions of keys.
    if (!g) this.groups[keyGroup] = g = decoded;
    else for (const [k, v] of decoded) g.set(k, v);
    if (!atBarrier) return;
    for (const [k, v] of statePackr.unpack(atBarrier) as Map<unknown, V | undefined>) {
      if (v === undefined) g.delete(k);
      else g.set(k, v);
    }
  }
}

/**
 * Every named state: its kind and its key groups, each encoded on its own (the unit a restore hands
 * out). `ttl`: its values are stored with their expiry (see ttl.ts).
 */
export type BackendSnapshot = { name: string; kind: string; groups: EncodedGroup[]; ttl?: true }[];

/** A named state: its table and, once user code has asked for it, its handle and TTL. */
interface TableEntry {
  kind: string;
  table: StateTable<unknown> | NumberTable;
  handle?: unknown;
  /** Its values are stored with their expiry: declared with a TTL, or restored from such a state. */
  stamped?: boolean;
  /** The TTL its handle was made with (undefined: none). */
  ttl?: TtlPolicy;
}

export class KeyedStateBackend implements KeyedStateStore {
  currentKey: unknown = undefined;
  currentNormalizedKey: unknown = undefined;
  currentKeyGroup = -1;
  private readonly tables = new Map<string, TableEntry>();
  /** The processing clock of TTL states, and what expired. */
  readonly ttl: TtlClock;
  /** Groups of dropped tables of numbers, for the next ones made. */
  private readonly numberGroups = new NumberGroupPool();

  constructor(
    readonly keyGroupRange: KeyGroupRange,
    readonly operatorName: string,
    readonly maxParallelism = MAX_PARALLELISM,
    /** The clock that times encoding slices (tests drive it). */
    private readonly now: () => number = () => performance.now(),
    /** The processing clock that states with a TTL expire on (tests drive it). */
    ttlNow: () => number = Date.now,
  ) {
    this.ttl = new TtlClock(ttlNow);
  }

  /** Set the key that state handles and timers act on. Returns the key group. */
  setCurrentKey(key: unknown): number {
    // Records come in runs of one key (a window's results share their end): the same number or string
    // is in the same key group without hashing it again. Not an object, whose fields may have changed.
    const t = typeof key;
    if ((t === 'number' || t === 'string') && Object.is(key, this.currentKey)) return this.currentKeyGroup;
    const nk = normalizeKey(key);
    const kg = keyGroupOf(nk, this.maxParallelism);
    if (kg < this.keyGroupRange.start || kg > this.keyGroupRange.end) {
      throw new StateError(
        `operator '${this.operatorName}' got key ${JSON.stringify(key)} of key group ${kg}, outside its ${this.keyGroupRange}; ` +
          `the key selector must return the same key for the same record in every process`,
      );
    }
    this.currentKey = key;
    this.currentNormalizedKey = nk;
    this.currentKeyGroup = kg;
    return kg;
  }

  /** Restore a key context saved earlier (timers carry their key). */
  setCurrentKeyUnchecked(key: unknown, normalizedKey: unknown, keyGroup: number): void {
    this.currentKey = key;
    this.currentNormalizedKey = normalizedKey;
    this.currentKeyGroup = keyGroup;
  }

  /** The table named `name`, made by `make` when absent; a table of another kind is refused. */
  private entry(name: string, kind: string, make: () => Omit<TableEntry, 'kind'>): TableEntry {
    if (typeof name !== 'string' || name.length === 0) throw new StateError('state name must be a non-empty string');
    if (isInternal(kind) !== name.startsWith(INTERNAL_PREFIX)) {
      throw new StateError(
        `state '${name}' of operator '${this.operatorName}': names starting with '${INTERNAL_PREFIX}' are the engine's; choose another name`,
      );
    }
    let e = this.tables.get(name);
    if (!e) this.tables.set(name, (e = { kind, ...make() }));
    else if (e.kind !== kind)
      throw new StateError(
        `state '${name}' of operator '${this.operatorName}' is a ${e.kind} state, not a ${kind} state`,
      );
    return e;
  }

  /**
   * The handle of user state `name`: made once, plain or with a TTL. A state's values are stored with
   * their expiry or not, for good: a TTL cannot be added to a state checkpointed without one, nor taken
   * from one checkpointed with one, and a handle is asked for with the TTL it was made with.
   */
  private handle<H>(
    name: string,
    kind: string,
    options: StateOptions,
    plain: (t: StateTable<unknown>) => H,
    withTtl: (t: StateTable<unknown>, p: TtlPolicy) => H,
  ): H {
    const what = `state '${name}' of operator '${this.operatorName}'`;
    const ttl = options.ttl === undefined ? undefined : ttlPolicyOf(options.ttl, what);
    const e = this.entry(name, kind, () => ({ table: new StateTable<unknown>(this.maxParallelism), stamped: !!ttl }));
    if (e.handle !== undefined) {
      if (JSON.stringify(e.ttl) !== JSON.stringify(ttl))
        throw new StateError(
          `${what} is asked for with ${describeTtl(ttl)}, but was declared with ${describeTtl(e.ttl)}`,
        );
      return e.handle as H;
    }
    if (!!e.stamped !== !!ttl)
      throw new StateError(
        `${what} was checkpointed ${e.stamped ? 'with' : 'without'} a TTL and is declared ${ttl ? 'with' : 'without'} one; ` +
          `a TTL cannot be ${ttl ? 'added to' : 'removed from'} a state that holds values: give the state a new name`,
      );
    const table = e.table as StateTable<unknown>;
    e.ttl = ttl;
    e.handle = ttl ? withTtl(table, ttl) : plain(table);
    return e.handle as H;
  }

  /**
   * `immutableValues`: for the engine's own operators, which always replace a value and never change
   * one in place, so a snapshot need not copy what they read.
   */
  value<T>(name: string, options: StateOptions & { immutableValues?: boolean } = {}): ValueState<T> {
    return this.handle<ValueState<T>>(
      name,
      'value',
      options,
      (t) => {
        t.valuesImmutable = options.immutableValues ?? false;
        return new ValueStateHandle<T>(this, t as StateTable<T>);
      },
      (t, p) => new TtlValueState<T>(this, t as StateTable<[T, number]>, p, this.ttl),
    );
  }

  map<K, V>(name: string, options: StateOptions = {}): MapState<K, V> {
    return this.handle<MapState<K, V>>(
      name,
      'map',
      options,
      (t) => new MapStateHandle<K, V>(this, t as StateTable<Map<K, V>>),
      (t, p) => new TtlMapState<K, V>(this, t as StateTable<Map<K, [V, number]>>, p, this.ttl),
    );
  }

  list<T>(name: string, options: StateOptions = {}): ListState<T> {
    return this.handle<ListState<T>>(
      name,
      'list',
      options,
      (t) => new ListStateHandle<T>(this, t as StateTable<T[]>),
      (t, p) => new TtlListState<T>(this, t as StateTable<[T, number][]>, p, this.ttl),
    );
  }

  /**
   * Snapshot every named state as of now. The capture is synchronous and costs O(key groups); the
   * encoding runs in slices of SNAPSHOT_SLICE_MS, and the promise settles when every group is encoded.
   */
  snapshot(): Promise<BackendSnapshot> {
    const parts = [...this.tables].map(([name, e]) => ({
      name,
      kind: e.kind,
      ttl: e.stamped,
      table: e.table,
      ...e.table.beginSnapshot(),
    }));
    return this.encodeCaptured(parts);
  }

  /** Yields to the event loop once SNAPSHOT_SLICE_MS have passed since it last did. */
  private slicer(): () => Promise<void> | undefined {
    let sliceStart = this.now();
    return () => {
      if (this.now() - sliceStart < SNAPSHOT_SLICE_MS) return undefined;
      return yieldToEventLoop().then(() => {
        sliceStart = this.now();
      });
    };
  }

  private async encodeCaptured(
    parts: {
      name: string;
      kind: string;
      ttl: boolean | undefined;
      table: StateTable<unknown> | NumberTable;
      capture: TableCapture | NumberCapture;
      keyGroups: number[];
    }[],
  ): Promise<BackendSnapshot> {
    const turn = this.slicer();
    for (const { table, capture, keyGroups } of parts) {
      for (const kg of keyGroups) {
        table.encodeCaptured(capture as TableCapture & NumberCapture, kg);
        await turn();
      }
      table.endSnapshot(capture as TableCapture & NumberCapture);
    }
    const out: BackendSnapshot = [];
    for (const { name, kind, ttl, capture } of parts) {
      if (capture.error !== undefined) {
        throw new StateError(
          `state '${name}' of operator '${this.operatorName}' cannot be snapshotted: ${(capture.error as Error)?.message ?? String(capture.error)}`,
          {
            cause: capture.error,
          },
        );
      }
      out.push({ name, kind, groups: capture.encoded.sort((a, b) => a[0] - b[0]), ...(ttl ? { ttl } : {}) });
    }
    return out;
  }

  /**
   * The engine's own keyed state (window panes, sessions, timers): a raw table, snapshotted and
   * restored with the rest. Its name starts with `__`.
   */
  internalTable<V>(name: string): StateTable<V> {
    return this.entry(name, INTERNAL, () => ({ table: new StateTable<unknown>(this.maxParallelism) }))
      .table as StateTable<V>;
  }

  /** One of the engine's keyed tables of numbers (a window pane of counts), snapshotted as columns. */
  internalNumberTable(name: string): NumberTable {
    return this.entry(name, INTERNAL_NUMBERS, () => ({
      table: new NumberTable(this.maxParallelism, this.numberGroups),
    })).table as NumberTable;
  }

  /** The engine's tables of numbers whose names start with `prefix`. */
  internalNumberTables(prefix: string): [string, NumberTable][] {
    return [...this.tables]
      .filter(([name, e]) => e.kind === INTERNAL_NUMBERS && name.startsWith(prefix))
      .map(([name, e]) => [name, e.table as NumberTable]);
  }

  /** The engine's tables whose names start with `prefix` (after a restore, to rebuild indexes). */
  internalTables<V>(prefix: string): [string, StateTable<V>][] {
    return [...this.tables]
      .filter(([name, e]) => e.kind === INTERNAL && name.startsWith(prefix))
      .map(([name, e]) => [name, e.table as StateTable<V>]);
  }

  /**
   * Drop one of the engine's tables (a fired window pane). A snapshot still encoding it goes on with
   * the maps as they are: whoever drops a table must not change what it held.
   */
  dropInternalTable(name: string): void {
    const e = this.tables.get(name);
    if (e === undefined || !isInternal(e.kind)) return;
    this.tables.delete(name);
    // Its groups serve the next table of numbers (the next pane), unless a snapshot still reads them.
    if (e.table instanceof NumberTable) e.table.release();
  }

  /**
   * Load a snapshot, keeping only the key groups this subtask owns. A group at a time, in slices of
   * SNAPSHOT_SLICE_MS between which the event loop runs: a job thread restoring gigabytes still ticks,
   * and its stall watchdog sees a restore, not a stall.
   */
  async restore(snapshot: BackendSnapshot): Promise<void> {
    const turn = this.slicer();
    for (const s of snapshot) {
      // User states get their handles when user code asks, with the TTL it declares then.
      const table =
        s.kind === INTERNAL_NUMBERS
          ? this.internalNumberTable(s.name)
          : this.entry(s.name, s.kind, () => ({
              table: new StateTable<unknown>(this.maxParallelism),
              stamped: s.ttl === true,
            })).table;
      for (const group of s.groups) {
        const kg = group[0];
        if (kg < this.keyGroupRange.start || kg > this.keyGroupRange.end) continue;
        table.loadGroup(kg, group);
        await turn();
      }
    }
  }

  /** Names and kinds of the states user code registered so far, with their key counts. */
  describe(): { name: string; kind: string; keys: number }[] {
    return [...this.tables]
      .filter(([, e]) => !isInternal(e.kind))
      .map(([name, e]) => ({ name, kind: e.kind, keys: e.table.size }));
  }
}

function describeTtl(ttl: TtlPolicy | undefined): string {
  return ttl ? `a TTL of ${ttl.ttlMs} ms (${ttl.renewOnRead ? 'OnReadAndWrite' : 'OnCreateAndWrite'})` : 'no TTL';
}
