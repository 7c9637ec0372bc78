/** Time services: one wall-clock scheduler per task, and per-key timers for keyed operators. */
import { BinaryHeap } from '../util/index.js';
import type { KeyedStateBackend } from '../state/index.js';

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
    this.timer = setTimeout(() => this.fire(), Math.max(0, top.at - Date.now()));
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

/** One timer per (key, timestamp) and time domain. Deleted timers are skipped lazily when popped. */
class TimerQueue {
  private readonly heap = new BinaryHeap<KeyedTimer>(timerLess);
  private readonly live = new Map<unknown, Set<number>>();

  add(backend: KeyedStateBackend, timestamp: number): boolean {
    let s = this.live.get(backend.currentNormalizedKey);
    if (!s) this.live.set(backend.currentNormalizedKey, (s = new Set()));
    if (s.has(timestamp)) return false;
    s.add(timestamp);
    this.heap.push({ timestamp, key: backend.currentKey, normalizedKey: backend.currentNormalizedKey, keyGroup: backend.currentKeyGroup });
    return true;
  }

  delete(backend: KeyedStateBackend, timestamp: number): void {
    const s = this.live.get(backend.currentNormalizedKey);
    if (s?.delete(timestamp) && s.size === 0) this.live.delete(backend.currentNormalizedKey);
  }

  /** Pop the next live timer with timestamp <= `upTo`. */
  pollDue(upTo: number): KeyedTimer | undefined {
    for (let t = this.heap.peek(); t && t.timestamp <= upTo; t = this.heap.peek()) {
      this.heap.pop();
      const s = this.live.get(t.normalizedKey);
      if (s?.delete(t.timestamp)) {
        if (s.size === 0) this.live.delete(t.normalizedKey);
        return t;
      }
    }
    return undefined;
  }

  get size(): number {
    let n = 0;
    for (const s of this.live.values()) n += s.size;
    return n;
  }

  /** The live timers (deleted ones are skipped). */
  snapshot(): KeyedTimer[] {
    return this.heap.toArray().filter((t) => this.live.get(t.normalizedKey)?.has(t.timestamp)).map((t) => ({ ...t, key: structuredClone(t.key) }));
  }

  restore(timers: readonly KeyedTimer[]): void {
    for (const t of timers) {
      let s = this.live.get(t.normalizedKey);
      if (!s) this.live.set(t.normalizedKey, (s = new Set()));
      if (s.has(t.timestamp)) continue;
      s.add(t.timestamp);
      this.heap.push({ ...t });
    }
  }
}

/** Event-time and processing-time timers of one keyed operator. */
export class KeyedTimerService {
  readonly event = new TimerQueue();
  readonly processing = new TimerQueue();

  constructor(
    private readonly backend: KeyedStateBackend,
    private readonly time: ProcessingTimeService,
    private readonly onProcessingTimer: (t: KeyedTimer) => void,
  ) {}

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

  snapshot(): { event: KeyedTimer[]; processing: KeyedTimer[] } {
    return { event: this.event.snapshot(), processing: this.processing.snapshot() };
  }

  /** Restore the timers of the key groups in range; processing-time ones are scheduled again. */
  restore(s: { event: KeyedTimer[]; processing: KeyedTimer[] }, range: { start: number; end: number }): void {
    const mine = (t: KeyedTimer): boolean => t.keyGroup >= range.start && t.keyGroup <= range.end;
    this.event.restore(s.event.filter(mine));
    const proc = s.processing.filter(mine);
    this.processing.restore(proc);
    for (const at of new Set(proc.map((t) => t.timestamp))) this.scheduleProcessing(at);
  }

  /** At `at`, fire every processing-time timer that is due. */
  private scheduleProcessing(at: number): void {
    this.time.schedule(at, (now) => {
      for (let t = this.processing.pollDue(now); t; t = this.processing.pollDue(now)) this.onProcessingTimer(t);
    });
  }
}
