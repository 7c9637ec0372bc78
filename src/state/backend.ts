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
import {
  keyGroupOf,
  MAX_PARALLELISM,
  normalizeKey,
  stateRestoreVerdict,
  type KeyGroupRange,
  type StateDeclarationSpec,
} from '../plan/index.js';
import type { KeyedStateStore, ListState, MapState, StateOptions, ValueState } from '../sdk/index.js';
import { ListStateHandle, MapStateHandle, ValueStateHandle } from './handles.js';
import { decodeGroup, StateTable, type EncodedGroup, type KeyedTable, type SnapshotCapture } from './table.js';
import { statePackr } from './group-codec.js';
import { DiskStorage } from './disk-storage.js';
import { DiskStateTable } from './disk-table.js';
import { NumberGroupPool, NumberTable, type NumberCapture } from './number-table.js';
import {
  declaresTtl,
  describeTtl,
  TtlClock,
  TtlListState,
  TtlMapState,
  TtlValueState,
  ttlPolicyOf,
  type TtlPolicy,
} from './ttl.js';

const INTERNAL = 'internal';
/** The engine's tables of numbers (window counts): NumberTable. */
const INTERNAL_NUMBERS = 'internal-numbers';
const isInternal = (kind: string): boolean => kind === INTERNAL || kind === INTERNAL_NUMBERS;
const INTERNAL_PREFIX = '__';

/** How long an encoding slice may run before the event loop gets a turn. @default 8 */
export const SNAPSHOT_SLICE_MS = 8;

/**
 * Every named state: its kind and its key groups, each encoded on its own (the unit a restore hands
 * out). `ttl`: its values are stored with their expiry (see ttl.ts).
 */
export type BackendSnapshot = {
  name: string;
  kind: string;
  groups: EncodedGroup[];
  ttl?: true;
  /** The state's declaration when it was checkpointed (its schema), if it had one. */
  declared?: StateDeclarationSpec;
}[];

/** A declared state: its declaration and the migration its values are restored through. */
interface Declared {
  spec: StateDeclarationSpec;
  migrate?: (old: unknown) => unknown;
}

/**
 * Where a backend keeps user states (value, map, list): on the heap, or on disk with a cache in front
 * (design record 024). The engine's own tables (windows, timers) stay on the heap either way.
 */
export interface DiskStateOptions {
  /** The worker's local state directory; each backend opens its store in a directory of its own under it. */
  localDir: string;
  /** Decoded values the cache holds per state. @default DEFAULT_DISK_CACHE_ENTRIES (disk-table.ts) */
  cacheEntries?: number;
  /** Names the store's directory (the operator and subtask). @default the operator's name */
  tag?: string;
}

/** A named state: its table and, once user code has asked for it, its handle and TTL. */
interface TableEntry {
  kind: string;
  table: KeyedTable<unknown> | NumberTable;
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
  /** The disk store of user states, opened with the first of them (disk backend only). */
  private storage: DiskStorage | undefined;
  /** The states the operator declared (with their schemas), by name. */
  private readonly declared = new Map<string, Declared>();
  /** The snapshots still encoding: a disk store closes after them (a final checkpoint's may still be). */
  private readonly encoding = new Set<Promise<unknown>>();

  constructor(
    readonly keyGroupRange: KeyGroupRange,
    readonly operatorName: string,
    readonly maxParallelism = MAX_PARALLELISM,
    /** The clock that times encoding slices (tests drive it). */
    private readonly now: () => number = () => performance.now(),
    /** The processing clock that states with a TTL expire on (tests drive it). */
    ttlNow: () => number = Date.now,
    /** Keep user states on disk; undefined: on the heap. */
    private readonly disk?: DiskStateOptions,
  ) {
    this.ttl = new TtlClock(ttlNow);
  }

  /**
   * Declare user state `name` with its schema, before a restore: a snapshot records the declaration, a
   * restore judges the stored one against it (and migrates through `migrate`), and the state is only
   * ever asked for as its declared kind.
   */
  declare(name: string, spec: StateDeclarationSpec, migrate?: (old: unknown) => unknown): void {
    this.declared.set(name, { spec, ...(migrate ? { migrate } : {}) });
  }

  /** A table for user state `name`: on the heap, or in this backend's disk store. */
  private userTable(name: string): KeyedTable<unknown> {
    if (!this.disk) return new StateTable<unknown>(this.maxParallelism);
    this.storage ??= new DiskStorage(this.disk.localDir, this.disk.tag ?? this.operatorName);
    return new DiskStateTable<unknown>(
      `state '${name}' of operator '${this.operatorName}'`,
      this.storage,
      this.storage.database(name),
      this.maxParallelism,
      this.disk.cacheEntries,
    );
  }

  /**
   * Close the disk store and remove its files, once the snapshots still encoding from it are done (a heap
   * backend has nothing to close).
   */
  async close(): Promise<void> {
    const storage = this.storage;
    this.storage = undefined;
    if (!storage) return;
    await Promise.allSettled([...this.encoding]);
    for (const e of this.tables.values()) if (e.table instanceof DiskStateTable) e.table.close();
    await storage.close();
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
    plain: (t: KeyedTable<unknown>) => H,
    withTtl: (t: KeyedTable<unknown>, p: TtlPolicy) => H,
  ): H {
    const known = this.tables.get(name);
    // User code may ask for its handle per record: one it has, with the same TTL, costs a lookup.
    if (known?.handle !== undefined && known.kind === kind && declaresTtl(options.ttl, known.ttl))
      return known.handle as H;
    const what = `state '${name}' of operator '${this.operatorName}'`;
    const declaredKind = this.declared.get(name)?.spec.kind;
    if (declaredKind !== undefined && declaredKind !== kind)
      throw new StateError(`${what} is declared as a ${declaredKind} state, not a ${kind} state`);
    const ttl = options.ttl === undefined ? undefined : ttlPolicyOf(options.ttl, what);
    const e = this.entry(name, kind, () => ({ table: this.userTable(name), stamped: !!ttl }));
    if (e.handle !== undefined)
      throw new StateError(
        `${what} is asked for with ${describeTtl(ttl)}, but was declared with ${describeTtl(e.ttl)}`,
      );
    if (!!e.stamped !== !!ttl)
      throw new StateError(
        `${what} was checkpointed ${e.stamped ? 'with' : 'without'} a TTL and is declared ${ttl ? 'with' : 'without'} one; ` +
          `a TTL cannot be ${ttl ? 'added to' : 'removed from'} a state that holds values: give the state a new name`,
      );
    const table = e.table as KeyedTable<unknown>;
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
        return new ValueStateHandle<T>(this, t as KeyedTable<T>);
      },
      (t, p) => new TtlValueState<T>(this, t as KeyedTable<[T, number]>, p, this.ttl),
    );
  }

  map<K, V>(name: string, options: StateOptions = {}): MapState<K, V> {
    return this.handle<MapState<K, V>>(
      name,
      'map',
      options,
      (t) => new MapStateHandle<K, V>(this, t as KeyedTable<Map<K, V>>),
      (t, p) => new TtlMapState<K, V>(this, t as KeyedTable<Map<K, [V, number]>>, p, this.ttl),
    );
  }

  list<T>(name: string, options: StateOptions = {}): ListState<T> {
    return this.handle<ListState<T>>(
      name,
      'list',
      options,
      (t) => new ListStateHandle<T>(this, t as KeyedTable<T[]>),
      (t, p) => new TtlListState<T>(this, t as KeyedTable<[T, number][]>, p, this.ttl),
    );
  }

  /**
   * Snapshot every named state as of now. The capture is synchronous and costs O(key groups); the
   * encoding runs in slices of SNAPSHOT_SLICE_MS, and the promise settles when every group is encoded.
   */
  snapshot(): Promise<BackendSnapshot> {
    try {
      const parts = [...this.tables].map(([name, e]) => ({
        name,
        kind: e.kind,
        ttl: e.stamped,
        declared: this.declared.get(name)?.spec,
        table: e.table,
        ...e.table.beginSnapshot(),
      }));
      const encoding = this.encodeCaptured(parts);
      if (this.storage) {
        this.encoding.add(encoding);
        const forget = (): boolean => this.encoding.delete(encoding);
        encoding.then(forget, forget);
      }
      return encoding;
    } catch (err) {
      // A disk state writes back its cache at the barrier: a value it cannot encode fails the snapshot.
      return Promise.reject(err);
    }
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
      declared: StateDeclarationSpec | undefined;
      table: KeyedTable<unknown> | NumberTable;
      capture: SnapshotCapture | NumberCapture;
      keyGroups: number[];
    }[],
  ): Promise<BackendSnapshot> {
    const turn = this.slicer();
    for (const { table, capture, keyGroups } of parts) {
      for (const kg of keyGroups) {
        table.encodeCaptured(capture as SnapshotCapture & NumberCapture, kg);
        await turn();
      }
      table.endSnapshot(capture as SnapshotCapture & NumberCapture);
    }
    const out: BackendSnapshot = [];
    for (const { name, kind, ttl, declared, capture } of parts) {
      if (capture.error !== undefined) {
        throw new StateError(
          `state '${name}' of operator '${this.operatorName}' cannot be snapshotted: ${(capture.error as Error)?.message ?? String(capture.error)}`,
          {
            cause: capture.error,
          },
        );
      }
      out.push({
        name,
        kind,
        groups: capture.encoded.sort((a, b) => a[0] - b[0]),
        ...(ttl ? { ttl } : {}),
        ...(declared ? { declared } : {}),
      });
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
              table: isInternal(s.kind) ? new StateTable<unknown>(this.maxParallelism) : this.userTable(s.name),
              stamped: s.ttl === true,
            })).table;
      const migrate = this.migrationOf(s);
      for (const group of s.groups) {
        const kg = group[0];
        if (kg < this.keyGroupRange.start || kg > this.keyGroupRange.end) continue;
        table.loadGroup(kg, migrate ? migrate(group) : group);
        await turn();
      }
    }
  }

  /**
   * How a checkpointed state's groups are converted to its declared schema (undefined: restored as
   * stored). A change its declaration neither reads nor migrates from is refused, as at submit.
   */
  private migrationOf(s: BackendSnapshot[number]): ((group: EncodedGroup) => EncodedGroup) | undefined {
    const now = this.declared.get(s.name);
    if (!s.declared || !now) return undefined;
    const verdict = stateRestoreVerdict(s.declared, now.spec);
    if ('refuse' in verdict)
      throw new StateError(
        `state '${s.name}' of operator '${this.operatorName}' cannot be restored: ${verdict.refuse}`,
      );
    if (verdict.restore === 'as-stored' || !now.migrate) return undefined;
    return migrateGroup(s.kind, s.ttl === true, now.migrate, `state '${s.name}' of operator '${this.operatorName}'`);
  }

  /** Names and kinds of the states user code registered so far, with their key counts. */
  describe(): { name: string; kind: string; keys: number }[] {
    return [...this.tables]
      .filter(([, e]) => !isInternal(e.kind))
      .map(([name, e]) => ({ name, kind: e.kind, keys: e.table.size }));
  }
}

/** A group with `fn` applied to each value as its kind holds them (a map's values, a list's elements). */
function migrateGroup(
  kind: string,
  stamped: boolean,
  fn: (old: unknown) => unknown,
  what: string,
): (group: EncodedGroup) => EncodedGroup {
  const one = (v: unknown): unknown => {
    try {
      if (!stamped) return fn(v);
      const [value, expiresAt] = v as [unknown, number];
      return [fn(value), expiresAt];
    } catch (err) {
      throw new StateError(`${what}: its migration failed on ${JSON.stringify(v)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  const convert = (stored: unknown): unknown =>
    kind === 'map'
      ? new Map([...(stored as Map<unknown, unknown>)].map(([k, v]) => [k, one(v)]))
      : kind === 'list'
        ? (stored as unknown[]).map(one)
        : one(stored);
  return (group) => {
    const out = new Map<unknown, unknown>();
    for (const [k, v] of decodeGroup<unknown>(group)) if (v !== undefined) out.set(k, convert(v));
    return [group[0], statePackr.pack(out)];
  };
}
