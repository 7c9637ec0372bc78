/**
 * The handles user code reads and writes keyed state through: each acts on its backend's current key,
 * in the table behind it (on the heap or on disk, whose snapshot sees every change).
 */
import type { ListState, MapState, ValueState } from '../sdk/index.js';
import type { KeyedTable } from './table.js';

/** What a handle reads of its backend: the current key and its key group. */
export interface CurrentKey {
  readonly currentKeyGroup: number;
  readonly currentNormalizedKey: unknown;
}

export class ValueStateHandle<T> implements ValueState<T> {
  constructor(
    private readonly b: CurrentKey,
    private readonly t: KeyedTable<T>,
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

export class MapStateHandle<K, V> implements MapState<K, V> {
  constructor(
    private readonly b: CurrentKey,
    private readonly t: KeyedTable<Map<K, V>>,
  ) {}
  private current(): ReadonlyMap<K, V> {
    return (
      this.t.get(this.b.currentKeyGroup, this.b.currentNormalizedKey) ?? (EMPTY_MAP as unknown as ReadonlyMap<K, V>)
    );
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

export class ListStateHandle<T> implements ListState<T> {
  constructor(
    private readonly b: CurrentKey,
    private readonly t: KeyedTable<T[]>,
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
