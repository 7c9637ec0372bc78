// A Clock whose time moves only when a test says so: advance(ms) runs every timer that falls due, in
// time order (a timer set by a timer runs too when it falls within the advance).
import type { Clock } from '../../src/util/index.js';

interface Timer {
  at: number;
  fn: () => void;
  every?: number;
  cancelled: boolean;
}

export class FakeClock implements Clock {
  private readonly timers: Timer[] = [];

  constructor(private time = 1_000_000) {}

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): () => void {
    return this.add({ at: this.time + ms, fn, cancelled: false });
  }

  every(ms: number, fn: () => void): () => void {
    return this.add({ at: this.time + ms, fn, every: ms, cancelled: false });
  }

  /** Timers set and not yet run or cancelled. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.time = due.at;
      if (due.every !== undefined) due.at += Math.max(1, due.every);
      else due.cancelled = true;
      due.fn();
    }
    this.time = until;
  }

  private add(t: Timer): () => void {
    this.timers.push(t);
    return () => void (t.cancelled = true);
  }
}
