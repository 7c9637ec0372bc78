import { InvalidArgumentError } from 'commander';

export interface Endpoint {
  host: string;
  port: number;
}

/** `host:port`, for --coordinator. */
export function parseCoordinator(v: string): Endpoint {
  const m = /^(.+):(\d+)$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port > 0 && port < 65536)) throw new InvalidArgumentError(`expected host:port, got '${v}'`);
  return { host: m[1]!, port };
}
