import { z } from 'zod';
import { ConnectorError } from '../errors.js';

/** Parse connector options with a zod schema; a failure names the connector and each bad option. */
export function parseOptions<S extends z.ZodType>(connector: string, schema: S, options: unknown): z.infer<S> {
  const { connector: _name, ...rest } = (options ?? {}) as Record<string, unknown>;
  const r = schema.safeParse(rest);
  if (!r.success) throw new ConnectorError(`${connector}: invalid options:\n${z.prettifyError(r.error)}`);
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
