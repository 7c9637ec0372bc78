import { InvalidArgumentError } from 'commander';
import type { TlsFlags } from './tls-flags.js';

export interface Endpoint {
  host: string;
  port: number;
}

/** Where a client finds the coordinator: one or more addresses, or (HA) where the leader is announced. */
export interface CoordinatorTarget {
  /** Tried in order: a standby keeps its control port closed, so the first that answers leads. */
  endpoints: Endpoint[];
  haDir?: string;
  etcdEndpoints?: string[];
  etcdCluster?: string;
  /** TLS flags (coherent: checked when parsed), loaded when connecting. */
  tls?: TlsFlags;
  /** TCP connect and TLS handshake together. @default 5,000 */
  handshakeTimeoutMs?: number;
}

/** `host:port`, for --coordinator. */
export function parseCoordinator(v: string): Endpoint {
  const m = /^(.+):(\d+)$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port > 0 && port < 65536)) throw new InvalidArgumentError(`expected host:port, got '${v}'`);
  return { host: m[1]!, port };
}

/** `host:port[,host:port...]`, for --coordinator: several are the coordinators of an HA cluster. */
export function parseCoordinators(v: string): Endpoint[] {
  return v.split(',').map((p) => parseCoordinator(p.trim()));
}
