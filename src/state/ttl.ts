/**
 * State time-to-live (the SDK's StateTtlConfig). A state with a TTL keeps each value with the time it
 * expires: a value state's value as [value, expiresAt], a map's entries as key -> [value, expiresAt], a
 * list's elements as [value, expiresAt] each. Snapshots carry them as they are, so an expiry survives a
 * restore and is judged on the processing clock of the process that reads it.
 *
 * An expired value is never returned. It is removed when it is met: on access, and by a sweep that
 * checks `cleanupSize` more keys of the state on every access (Flink's incremental cleanup), so a state
 * whose keys are never read again still empties while the state is in use.
 */
import { StateError } from '../errors.js';
import type { ListState, MapState, StateTtlConfig, ValueState } from '../sdk/index.js';
import type { KeyedTable } from './table.js';
import type { CurrentKey } from './handles.js';

type Stamped<V> = [value: V, expiresAt: number];

/** Keys checked by the sweep on each access, unless the state says otherwise. Flink's default too. */
export const DEFAULT_TTL_CLEANUP_SIZE = 5;
export const TTL_UPDATE_TYPES = ['OnCreateAndWrite', 'OnReadAndWrite'] as const;

/** Key groups the sweep may move through in one access, at least (see Sweep.step). */
const MIN_GROUPS_PER_STEP = 8;

/** A checked StateTtlConfig. */
export interface TtlPolicy {
  ttlMs: number;
  renewOnRead: boolean;
  cleanupSize: number;
}

/** Check a state's TTL as user code declared it; `what` names the state in the refusal. */
export function ttlPolicyOf(config: StateTtlConfig, what: string): TtlPolicy {
  const { ttlMs, updateType = 'OnCreateAndWrite', cleanupSize = DEFAULT_TTL_CLEANUP_SIZE } = config;
  if (typeof ttlMs !== 'number' || !(ttlMs > 0) || !Number.isFinite(ttlMs))
    throw new StateError(`${what}: ttl.ttlMs must be a positive number of milliseconds, got ${String(ttlMs)}`);
  if (!TTL_UPDATE_TYPES.includes(updateType))
    throw new StateError(
      `${what}: ttl.updateType must be one of ${TTL_UPDATE_TYPES.join(', ')}, got ${String(updateType)}`,
    );
  if (!Number.isInteger(cleanupSize) || cleanupSize < 0)
    throw new StateError(`${what}: ttl.cleanupSize must be a whole number of keys, got ${String(cleanupSize)}`);
  return { ttlMs, renewOnRead: updateType === 'OnReadAndWrite', cleanupSize };
}

/**
 * Whether `config` (as user code passes it, per access) declares the TTL `policy` was made from; no
 * TTL declares none. ttlPolicyOf's defaults, without its validation: cheap enough per record.
 */
export function declaresTtl(config: StateTtlConfig | undefined, policy: TtlPolicy | undefined): boolean {
  if (policy === undefined || config === undefined) return policy === config;
  return (
    policy.ttlMs === config.ttlMs &&
    policy.renewOnRead === (config.updateType === 'OnReadAndWrite') &&
    policy.cleanupSize === (config.cleanupSize ?? DEFAULT_TTL_CLEANUP_SIZE)
  );
}

/** A TTL as a refusal names it. */
export function describeTtl(ttl: TtlPolicy | undefined): string {
  return ttl ? `a TTL of ${ttl.ttlMs} ms (${ttl.renewOnRead ? 'OnReadAndWrite' : 'OnCreateAndWrite'})` : 'no TTL';
}

/** The processing clock TTL states read, and how many values expired (every TTL state of a backend). */
export class TtlClock {
  /** Values (map entries, list elements) removed because they had expired. */
  expired = 0;
  constructor(readonly now: () => number) {}
}

/**
 * The background cleanup of one table: walks its keys a few at a time, across accesses, group after
 * group and round again. `clean` removes what expired of one key's stored value.
 */
class Sweep {
  private keyGroup = 0;
  private keys: Iterator<[unknown, unknown]> | undefined;

  constructor(
    private readonly table: KeyedTable<unknown>,
    private readonly clean: (keyGroup: number, key: unknown, stored: unknown, now: number) => void,
  ) {}

  /**
   * Check up to `n` keys. Moving on to the next key group counts against a bound of its own (at least
   * MIN_GROUPS_PER_STEP), so a state of few keys in many empty groups costs a few steps, not a round.
   */
  step(n: number, now: number): void {
    const groups = this.table.keyGroupCount;
    for (let moves = Math.max(MIN_GROUPS_PER_STEP, n); n > 0 && moves > 0;) {
      if (this.keys === undefined) {
        const entries = this.table.entriesOf(this.keyGroup);
        if (entries === undefined) {
          this.keyGroup = (this.keyGroup + 1) % groups;
          moves--;
          continue;
        }
        this.keys = entries;
      }
      const next = this.keys.next();
      if (next.done) {
        this.keys = undefined;
        this.keyGroup = (this.keyGroup + 1) % groups;
        moves--;
        continue;
      }
      // Removing the key just visited is safe: entriesOf goes on past deletions.
      this.clean(this.keyGroup, next.value[0], next.value[1], now);
      n--;
    }
  }
}

/** What every TTL handle shares: its table, its policy, the clock and the sweep. */
abstract class TtlHandle<S> {
  private readonly sweep: Sweep;

  constructor(
    protected readonly b: CurrentKey,
    protected readonly t: KeyedTable<S>,
    protected readonly p: TtlPolicy,
    protected readonly clock: TtlClock,
  ) {
    this.sweep = new Sweep(t as KeyedTable<unknown>, (kg, key, stored, now) =>
      this.cleanKey(kg, key, stored as S, now),
    );
  }

  /** The clock's time, after the sweep's step: every access calls it once. */
  protected access(): number {
    const now = this.clock.now();
    if (this.p.cleanupSize > 0) this.sweep.step(this.p.cleanupSize, now);
    return now;
  }

  protected expiresAt(now: number): number {
    return now + this.p.ttlMs;
  }

  /** Remove what expired of `key`'s stored value (the sweep's work). */
  protected abstract cleanKey(keyGroup: number, key: unknown, stored: S, now: number): void;
}

export class TtlValueState<T> extends TtlHandle<Stamped<T>> implements ValueState<T> {
  value(): T | undefined {
    const now = this.access();
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const s = this.t.get(kg, key);
    if (s === undefined) return undefined;
    if (s[1] <= now) {
      this.t.delete(kg, key);
      this.clock.expired++;
      return undefined;
    }
    if (this.p.renewOnRead) this.t.set(kg, key, [s[0], this.expiresAt(now)]);
    return s[0];
  }

  update(value: T): void {
    const now = this.access();
    if (value === undefined) this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
    else this.t.set(this.b.currentKeyGroup, this.b.currentNormalizedKey, [value, this.expiresAt(now)]);
  }

  clear(): void {
    this.access();
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }

  protected cleanKey(kg: number, key: unknown, stored: Stamped<T>, now: number): void {
    if (stored[1] > now) return;
    this.t.delete(kg, key);
    this.clock.expired++;
  }
}

export class TtlMapState<K, V> extends TtlHandle<Map<K, Stamped<V>>> implements MapState<K, V> {
  /** The current key's map with its expired entries removed (undefined when none is left). */
  private live(now: number): Map<K, Stamped<V>> | undefined {
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const m = this.t.get(kg, key);
    return m && this.purge(kg, key, m, now);
  }

  private purge(kg: number, key: unknown, m: Map<K, Stamped<V>>, now: number): Map<K, Stamped<V>> | undefined {
    for (const [k, s] of m) {
      if (s[1] > now) continue;
      m.delete(k);
      this.clock.expired++;
    }
    if (m.size > 0) return m;
    this.t.delete(kg, key);
    return undefined;
  }

  /** Entry `k`, unless expired (then removed); renewed when reads renew. */
  private entry(k: K, now: number): Stamped<V> | undefined {
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const m = this.t.get(kg, key);
    const s = m?.get(k);
    if (m === undefined || s === undefined) return undefined;
    if (s[1] <= now) {
      m.delete(k);
      this.clock.expired++;
      if (m.size === 0) this.t.delete(kg, key);
      return undefined;
    }
    if (this.p.renewOnRead) s[1] = this.expiresAt(now);
    return s;
  }

  get(k: K): V | undefined {
    return this.entry(k, this.access())?.[0];
  }

  has(k: K): boolean {
    return this.entry(k, this.access()) !== undefined;
  }

  put(k: K, value: V): void {
    const now = this.access();
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const m = this.t.get(kg, key);
    if (m) m.set(k, [value, this.expiresAt(now)]);
    else this.t.set(kg, key, new Map([[k, [value, this.expiresAt(now)]]]));
  }

  remove(k: K): void {
    this.access();
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const m = this.t.get(kg, key);
    if (!m?.delete(k)) return;
    if (m.size === 0) this.t.delete(kg, key);
  }

  /** The live entries, renewed when reads renew: a copy, so they may be changed while iterated. */
  private snapshot(): [K, Stamped<V>][] {
    const now = this.access();
    const m = this.live(now);
    if (!m) return [];
    if (this.p.renewOnRead) for (const s of m.values()) s[1] = this.expiresAt(now);
    return [...m];
  }

  keys(): IterableIterator<K> {
    return this.snapshot()
      .map(([k]) => k)
      .values();
  }

  values(): IterableIterator<V> {
    return this.snapshot()
      .map(([, s]) => s[0])
      .values();
  }

  entries(): IterableIterator<[K, V]> {
    return this.snapshot()
      .map(([k, s]): [K, V] => [k, s[0]])
      .values();
  }

  size(): number {
    return this.live(this.access())?.size ?? 0;
  }

  isEmpty(): boolean {
    return this.size() === 0;
  }

  clear(): void {
    this.access();
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }

  protected cleanKey(kg: number, key: unknown, stored: Map<K, Stamped<V>>, now: number): void {
    for (const s of stored.values()) {
      // Only a map with an expired entry is taken through get(), which a snapshot in flight copies.
      if (s[1] <= now) {
        this.purge(kg, key, this.t.get(kg, key)!, now);
        return;
      }
    }
  }
}

export class TtlListState<T> extends TtlHandle<Stamped<T>[]> implements ListState<T> {
  /** The current key's live elements; the stored list loses its expired ones. */
  private live(now: number): Stamped<T>[] {
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const l = this.t.get(kg, key);
    return l ? this.purge(kg, key, l, now) : [];
  }

  private purge(kg: number, key: unknown, l: Stamped<T>[], now: number): Stamped<T>[] {
    const kept = l.filter((s) => s[1] > now);
    if (kept.length === l.length) return l;
    this.clock.expired += l.length - kept.length;
    if (kept.length === 0) this.t.delete(kg, key);
    else this.t.set(kg, key, kept);
    return kept;
  }

  get(): T[] {
    const now = this.access();
    const l = this.live(now);
    if (this.p.renewOnRead) for (const s of l) s[1] = this.expiresAt(now);
    return l.map((s) => s[0]);
  }

  add(value: T): void {
    const now = this.access();
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    const l = this.t.get(kg, key);
    if (l) l.push([value, this.expiresAt(now)]);
    else this.t.set(kg, key, [[value, this.expiresAt(now)]]);
  }

  addAll(values: Iterable<T>): void {
    for (const v of values) this.add(v);
  }

  update(values: T[]): void {
    const now = this.access();
    const { currentKeyGroup: kg, currentNormalizedKey: key } = this.b;
    if (values.length === 0) this.t.delete(kg, key);
    else
      this.t.set(
        kg,
        key,
        values.map((v): Stamped<T> => [v, this.expiresAt(now)]),
      );
  }

  clear(): void {
    this.access();
    this.t.delete(this.b.currentKeyGroup, this.b.currentNormalizedKey);
  }

  protected cleanKey(kg: number, key: unknown, stored: Stamped<T>[], now: number): void {
    if (stored.some((s) => s[1] <= now)) this.purge(kg, key, stored, now);
  }
}
