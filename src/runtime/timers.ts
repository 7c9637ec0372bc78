/** Time services: one wall-clock scheduler per task, and per-key timers for keyed operators. */
import { BinaryHeap, setTimerUntil } from '../util/index.js';
import type { KeyedStateBackend, StateTable } from '../state/index.js';

interface Scheduled {
  at: number;
  seq: number;
  cb: (timestamp: number) => void;
}

/**
 * Runs callbacks when the wall clock reaches their time, on the task's event loop turn: never while a
 * batch is being processed, since batch processing is synchronous. One Node timer serves all callbacks.
 */
export class ProcessingTimeService {
  private readonly heap = new BinaryHeap<Scheduled>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private seq = 0;
  private closed = false;

  constructor(
    private readonly onError: (err: unknown) => void,
    private readonly afterFire: () => void,
  ) {}

  now(): number {
    return Date.now();
  }

  schedule(at: number, cb: (timestamp: number) => void): void {
    if (this.closed) return;
    this.heap.push({ at, seq: this.seq++, cb });
    this.arm();
  }

  get pending(): number {
    return this.heap.size;
  }

  private arm(): void {
    const top = this.heap.peek();
    if (!top || top.at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = top.at;
    this.timer = setTimerUntil(() => this.fire(), top.at);
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = Infinity;
    if (this.closed) return;
    try {
      const now = Date.now();
      for (let t = this.heap.peek(); t && t.at <= now; t = this.heap.peek()) {
        this.heap.pop();
        t.cb(t.at);
      }
      this.afterFire();
    } catch (err) {
      this.close();
      this.onError(err);
      return;
    }
    this.arm();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

export interface KeyedTimer {
  timestamp: number;
  key: unknown;
  normalizedKey: unknown;
  keyGroup: number;
}

const timerLess = (a: KeyedTimer, b: KeyedTimer): boolean => a.timestamp < b.timestamp;

/** A key's live timers in one domain, kept in keyed state so snapshots and restores carry them. */
interface KeyTimers {
  key: unknown;
  timestamps: Set<number>;
}

/**
 * One timer per (key, timestamp) and time domain. The live set is keyed state (an engine table in the
 * operator's backend, so it is snapshotted copy-on-write with the rest); the heap orders it and is
 * rebuilt from the table on restore. Deleted timers are skipped lazily when popped.
 */
class TimerQueue {
  private readonly heap = new BinaryHeap<KeyedTimer>(timerLess);
  private readonly live: StateTable<KeyTimers>;

  constructor(backend: KeyedStateBackend, name: string) {
    this.live = backend.internalTable<KeyTimers>(name);
  }

  add(backend: KeyedStateBackend, timestamp: number): boolean {
    const kg = backend.currentKeyGroup;
    const nk = backend.currentNormalizedKey;
    const k = this.live.get(kg, nk);
    if (k?.timestamps.has(timestamp)) return false;
    if (k) k.timestamps.add(timestamp);
    else this.live.set(kg, nk, { key: backend.currentKey, timestamps: new Set([timestamp]) });
    this.heap.push({ timestamp, key: backend.currentKey, normalizedKey: nk, keyGroup: kg });
    return true;
  }

  delete(backend: KeyedStateBackend, timestamp: number): void {
    this.remove(backend.currentKeyGroup, backend.currentNormalizedKey, timestamp);
  }

  private remove(keyGroup: number, normalizedKey: unknown, timestamp: number): boolean {
    const k = this.live.get(keyGroup, normalizedKey);
    if (!k?.timestamps.delete(timestamp)) return false;
    if (k.timestamps.size === 0) this.live.delete(keyGroup, normalizedKey);
    return true;
  }

  /** Pop the next live timer with timestamp <= `upTo`. */
  pollDue(upTo: number): KeyedTimer | undefined {
    for (let t = this.heap.peek(); t && t.timestamp <= upTo; t = this.heap.peek()) {
      this.heap.pop();
      if (this.remove(t.keyGroup, t.normalizedKey, t.timestamp)) return t;
    }
    return undefined;
  }

  get size(): number {
    let n = 0;
    for (const g of this.live.groups) if (g) for (const k of g.values()) n += k.timestamps.size;
    return n;
  }

  /** After a restore filled the live table: order its timers again. Returns them. */
  rebuild(): KeyedTimer[] {
    const all: KeyedTimer[] = [];
    this.live.groups.forEach((g, keyGroup) => {
      if (!g) return;
      for (const [normalizedKey, k] of g)
        for (const timestamp of k.timestamps) all.push({ timestamp, key: k.key, normalizedKey, keyGroup });
    });
    for (const t of all) this.heap.push(t);
    return all;
  }
}

/** Event-time and processing-time timers of one keyed operator. */
export class KeyedTimerService {
  readonly event: TimerQueue;
  readonly processing: TimerQueue;

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly time: ProcessingTimeService,
    private readonly onProcessingTimer: (t: KeyedTimer) => void,
  ) {
    this.event = new TimerQueue(backend, '__timers:event');
    this.processing = new TimerQueue(backend, '__timers:processing');
  }

  registerEventTime(timestamp: number): void {
    this.event.add(this.backend, timestamp);
  }

  deleteEventTime(timestamp: number): void {
    this.event.delete(this.backend, timestamp);
  }

  registerProcessingTime(timestamp: number): void {
    if (this.processing.add(this.backend, timestamp)) this.scheduleProcessing(timestamp);
  }

  deleteProcessingTime(timestamp: number): void {
    this.processing.delete(this.backend, timestamp);
  }

  /** After the backend was restored: order the restored timers again and schedule the processing-time ones. */
  rebuild(): void {
    this.event.rebuild();
    for (const at of new Set(this.processing.rebuild().map((t) => t.timestamp))) this.scheduleProcessing(at);
  }

  /** At `at`, fire every processing-time timer that is due. */
  private scheduleProcessing(at: number): void {
    this.time.schedule(at, (now) => {
      for (let t = this.processing.pollDue(now); t; t = this.processing.pollDue(now)) this.onProcessingTimer(t);
    });
  }
}
