/**
 * Heap keyed state, partitioned by key group: each named state is a table of per-key-group maps, so a
 * snapshot or a rescale moves whole key groups. Handles read the backend's current key on every call.
 */
import { StateError } from '../errors.js';
import { keyGroupOf, MAX_PARALLELISM, normalizeKey, type KeyGroupRange } from '../plan/index.js';
import type { KeyedStateStore, ListState, MapState, ValueState } from '../sdk/index.js';

export class StateTable<V> {
  readonly groups: (Map<unknown, V> | undefined)[];
  constructor(maxParallelism: number) {
    this.groups = new Array<Map<unknown, V> | undefined>(maxParallelism);
  }

  get(keyGroup: number, key: unknown): V | undefined {
    return this.groups[keyGroup]?.get(key);
  }

  set(keyGroup: number, key: unknown, value: V): void {
    let g = this.groups[keyGroup];
    if (!g) this.groups[keyGroup] = g = new Map();
    g.set(key, value);
  }

  delete(keyGroup: number, key: unknown): void {
    this.groups[keyGroup]?.delete(key);
  }

  /** Number of keys with a value, over all key groups. */
  get size(): number {
    let n = 0;
    for (const g of this.groups) n += g?.size ?? 0;
    return n;
  }
}

/** Every named state, as key-group-ordered entries. */
export type BackendSnapshot = { name: string; kind: string; groups: [number, [unknown, unknown][]][] }[];

export class KeyedStateBackend implements KeyedStateStore {
  currentKey: unknown = undefined;
  currentNormalizedKey: unknown = undefined;
  currentKeyGroup = -1;
  private readonly tables = new Map<string, { kind: string; table: StateTable<unknown>; handle: unknown }>();

  constructor(
    readonly keyGroupRange: KeyGroupRange,
    readonly operatorName: string,
    readonly maxParallelism = MAX_PARALLELISM,
  ) {}

  /** Set the key that state handles and timers act on. Returns the key group. */
  setCurrentKey(key: unknown): number {
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

  private table<H>(name: string, kind: string, make: (t: StateTable<unknown>) => H): H {
    if (typeof name !== 'string' || name.length === 0) throw new StateError('state name must be a non-empty string');
    let e = this.tables.get(name);
    if (!e) {
      const table = new StateTable<unknown>(this.maxParallelism);
      e = { kind, table, handle: make(table) };
      this.tables.set(name, e);
    } else if (e.kind !== kind) {
      throw new StateError(`state '${name}' of operator '${this.operatorName}' is a ${e.kind} state, not a ${kind} state`);
    }
    return e.handle as H;
  }

  value<T>(name: string): ValueState<T> {
    return this.table(name, 'value', (t) => new ValueStateHandle<T>(this, t as StateTable<T>));
  }

  map<K, V>(name: string): MapState<K, V> {
    return this.table(name, 'map', (t) => new MapStateHandle<K, V>(this, t as StateTable<Map<K, V>>));
  }

  list<T>(name: string): ListState<T> {
    return this.table(name, 'list', (t) => new ListStateHandle<T>(this, t as StateTable<T[]>));
  }

  /**
   * A deep copy of every named state, key group by key group (the unit a restore hands out). Kinds
   * are kept so a restore creates the same handles.
   */
  snapshot(): BackendSnapshot {
    const out: BackendSnapshot = [];
    for (const [name, e] of this.tables) {
      const groups: [number, [unknown, unknown][]][] = [];
      e.table.groups.forEach((g, kg) => {
        if (g && g.size > 0) groups.push([kg, structuredClone([...g])]);
      });
      out.push({ name, kind: e.kind, groups });
    }
    return out;
  }

  /** Load a snapshot, keeping only the key groups this subtask owns. */
  restore(snapshot: BackendSnapshot): void {
    for (const s of snapshot) {
      if (s.kind === 'value') this.value(s.name);
      else if (s.kind === 'map') this.map(s.name);
      else this.list(s.name);
      const table = this.tables.get(s.name)!.table;
      for (const [kg, entries] of s.groups) {
        if (kg < this.keyGroupRange.start || kg > this.keyGroupRange.end) continue;
        for (const [k, v] of structuredClone(entries)) table.set(kg, k, v);
      }
    }
  }

  /** Names and kinds of the states registered so far, with their key counts. */
  describe(): { name: string; kind: string; keys: number }[] {
    return [...this.tables].map(([name, e]) => ({ name, kind: e.kind, keys: e.table.size }));
  }
}

class ValueStateHandle<T> implements ValueState<T> {
  constructor(
    private readonly b: KeyedStateBackend,
    private readonly t: StateTable<T>,
  ) {}
  value(): T | undefined {
    return this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }
  update(value: T): void {
    if (value === undefined) this.clear();
    else this.t.set(this.b.currentKeyGroup, this.b.currentNormalizedKey, value);
  }
  clear(): void {
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }
}

const EMPTY_MAP: ReadonlyMap<unknown, unknown> = new Map<unknown, unknown>();

class MapStateHandle<K, V> implements MapState<K, V> {
  constructor(
    private readonly b: KeyedStateBackend,
    private readonly t: StateTable<Map<K, V>>,
  ) {}
  private current(): ReadonlyMap<K, V> {
    return this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey) ?? (EMPTY_MAP as unknown as ReadonlyMap<K, V>);
  }
  get(key: K): V | undefined {
    return this.current().get(key);
  }
  put(key: K, value: V): void {
    let m = this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey);
    if (!m) this.t.set(this.b.currentKeyGroup, this.b.currentNormalizedKey, (m = new Map()));
    m.set(key, value);
  }
  has(key: K): boolean {
    return this.current().has(key);
  }
  remove(key: K): void {
    const m = this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey);
    if (!m) return;
    m.delete(key);
    if (m.size === 0) this.clear();
  }
  keys(): IterableIterator<K> {
    return this.current().keys() as IterableIterator<K>;
  }
  values(): IterableIterator<V> {
    return this.current().values() as IterableIterator<V>;
  }
  entries(): IterableIterator<[K, V]> {
    return this.current().entries() as IterableIterator<[K, V]>;
  }
  size(): number {
    return this.current().size;
  }
  isEmpty(): boolean {
    return this.current().size === 0;
  }
  clear(): void {
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }
}

class ListStateHandle<T> implements ListState<T> {
  constructor(
    private readonly b: KeyedStateBackend,
    private readonly t: StateTable<T[]>,
  ) {}
  get(): T[] {
    return this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey) ?? [];
  }
  add(value: T): void {
    const l = this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey);
    if (l) l.push(value);
    else this.t.set(this.b.currentKeyGroup, this.b.currentNormalizedKey, [value]);
  }
  addAll(values: Iterable<T>): void {
    for (const v of values) this.add(v);
  }
  update(values: T[]): void {
    if (values.length === 0) this.clear();
    else this.t.set(this.b.currentKeyGroup, this.b.currentNormalizedKey, [...values]);
  }
  clear(): void {
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }
}
