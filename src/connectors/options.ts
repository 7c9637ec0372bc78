import type { z } from 'zod';
import { ConnectorError } from '../errors.js';
import { describeIssues, formatPath } from '../util/index.js';

/** Parse connector options with a zod schema; a failure names the connector and each bad option. */
export function parseOptions<S extends z.ZodType>(connector: string, schema: S, options: unknown): z.infer<S> {
  const { connector: _name, ...rest } = (options ?? {}) as Record<string, unknown>;
  const r = schema.safeParse(rest);
  if (!r.success) {
    const issues = describeIssues(r.error.issues, rest, (path) => (path.length > 0 ? `option ${formatPath(path)}` : ''), schema);
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
