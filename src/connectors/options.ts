import { z } from 'zod';
import { ConnectorError } from '../errors.js';
import { describeIssues, formatPath } from '../util/index.js';

/** Parse connector options with a zod schema; a failure names the connector and each bad option. */
export function parseOptions<S extends z.ZodType>(connector: string, schema: S, options: unknown): z.infer<S> {
  const { connector: _name, ...rest } = (options ?? {}) as Record<string, unknown>;
  const r = schema.safeParse(rest);
  if (!r.success) {
    const issues = describeIssues(
      r.error.issues,
      rest,
      (path) => (path.length > 0 ? `option ${formatPath(path)}` : ''),
      schema,
    );
    throw new ConnectorError(`${connector}: invalid options:${r.error.issues.length === 1 ? ' ' : '\n'}${issues}`);
  }
  return r.data;
}

/** Sleep for `ms`, or until `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Paces a source to `perSecond` records in wall-clock time (undefined: flat out). `allowance(max)`
 * says how many it may emit now, after waiting a little when that is none; `emitted(n)` counts them.
 */
export class RatePacer {
  private readonly started = Date.now();
  private count = 0;

  constructor(
    private readonly perSecond: number | undefined,
    private readonly signal: AbortSignal,
  ) {}

  async allowance(max: number): Promise<number> {
    const rate = this.perSecond;
    if (rate === undefined) return max;
    const allowed = Math.floor(((Date.now() - this.started) / 1000) * rate) + 1 - this.count;
    if (allowed > 0) return Math.min(max, allowed);
    await sleep(Math.min(100, Math.max(1, Math.ceil(1000 / rate))), this.signal);
    return 0;
  }

  emitted(n: number): void {
    this.count += n;
  }
}

/** How long a connector rides out an outage of its system (retrying calls, reconnecting) before its subtask fails. */
export const DEFAULT_RECONNECT_TIMEOUT_MS = 30_000;

/**
 * The option every connector to an external system takes: how long it retries a lost connection or a
 * failed call before it fails its subtask (which restarts the job from its checkpoint). 0: at once.
 */
export const ReconnectTimeout = z.number().int().min(0).default(DEFAULT_RECONNECT_TIMEOUT_MS);

/** The wait before retry `attempt` (1, 2, ...): 250 ms doubling to 2 s. */
export const retryDelayMs = (attempt: number): number => Math.min(2_000, 250 * 2 ** Math.min(attempt - 1, 8));

/** How many retries (waiting retryDelayMs before each) add up to about `timeoutMs`. */
export function retriesWithin(timeoutMs: number): number {
  let n = 0;
  for (let waited = 0; waited < timeoutMs; waited += retryDelayMs(++n));
  return n;
}

/**
 * Call `fn` until it succeeds, retrying what `retriable` says may pass (a refused connection, a server
 * restarting) with retryDelayMs between tries, for up to `timeoutMs` after the first failure; then, or
 * on an error that will not pass, throw the last error. `onRetry` hears each failure it rides out.
 */
export async function retrying<T>(
  fn: () => Promise<T>,
  o: {
    timeoutMs: number;
    signal: AbortSignal;
    retriable: (err: unknown) => boolean;
    onRetry?: (err: unknown, attempt: number) => void;
  },
): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delay = retryDelayMs(attempt);
      if (o.signal.aborted || !o.retriable(err) || Date.now() - started + delay > o.timeoutMs) throw err;
      o.onRetry?.(err, attempt);
      await sleep(delay, o.signal);
    }
  }
}
