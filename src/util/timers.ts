/**
 * Timers whose delays come from configuration. Node holds a timer's delay in 31 bits: anything above
 * 2^31 - 1 ms (about 24.8 days), and Infinity, fires after 1 ms instead, so a "huge" timeout would
 * expire at once. Here a delay above the limit means never: nothing is armed.
 */

/** The longest delay a Node timer can wait, in ms. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** Whether a delay of `ms` means "never" (above the timer limit, Infinity or NaN). */
export function isNeverDelay(ms: number): boolean {
  return !(ms <= MAX_TIMER_DELAY_MS);
}

/** setTimeout for a configured delay: above the timer limit it arms nothing and returns undefined. */
export function setTimer(fn: () => void, ms: number): NodeJS.Timeout | undefined {
  return isNeverDelay(ms) ? undefined : setTimeout(fn, Math.max(0, ms));
}

/** setInterval for a configured period: above the timer limit it arms nothing and returns undefined. */
export function setRepeating(fn: () => void, ms: number): NodeJS.Timeout | undefined {
  return isNeverDelay(ms) ? undefined : setInterval(fn, Math.max(1, ms));
}

/**
 * A timer for a moment that may lie further ahead than a timer can wait (a processing-time timer days
 * away): it waits at most the limit, and the callback checks whether the moment has come.
 */
export function setTimerUntil(fn: () => void, atMs: number, now = Date.now()): NodeJS.Timeout {
  return setTimeout(fn, Math.min(MAX_TIMER_DELAY_MS, Math.max(0, atMs - now)));
}

/**
 * Time as a component sees it: injected, so logic that decides on time (liveness, checkpoints,
 * placement deadlines) is unit-tested on a fake clock. `after` and `every` follow setTimer's rule: a
 * delay above the timer limit never fires.
 */
export interface Clock {
  now(): number;
  /** Call `fn` once after `ms`; returns the cancel. */
  after(ms: number, fn: () => void): () => void;
  /** Call `fn` every `ms`; returns the cancel. */
  every(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const t = setTimer(fn, ms);
    return () => t && clearTimeout(t);
  },
  every(ms, fn) {
    const t = setRepeating(fn, ms);
    return () => t && clearInterval(t);
  },
};
