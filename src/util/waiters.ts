import type { Clock } from './timers.js';

/** Callers waiting for something to happen (wake), each for at most its own time: a checkpoint's idle waiters, the slot waiter's placements and backoffs. */
export class Waiters {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next wake(), or after `ms` on `clock`. */
  wait(clock: Clock, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = clock.after(ms, () => done());
      const done = (): void => {
        cancel();
        this.waiting.delete(done);
        resolve();
      };
      this.waiting.add(done);
    });
  }

  /** Every caller waiting now goes on. */
  wake(): void {
    for (const w of [...this.waiting]) w();
  }
}
