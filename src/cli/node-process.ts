/** What `clink node` needs in both roles and in HA: its flags, signals, HTTP API and ready file. */
import type { CoordinatorConfig } from '../coordinator/index.js';
import { EnvironmentError, listenError } from '../errors.js';
import { buildHttpApp } from '../http/index.js';
import type { Logger } from '../log/index.js';
import type { ReconnectPolicy, WorkerConfig } from '../worker/index.js';
import { writeFileAtomic } from './files.js';
import type { TlsFlags } from './tls-flags.js';

/** HA: how a coordinator stands for leadership, and how a worker finds the leader. */
export interface HaFlags {
  haDir?: string;
  allowUnsafeLocks?: boolean;
  etcdEndpoints?: string[];
  etcdCluster?: string;
  etcdLeaseTtlS?: number;
}

export interface NodeFlags {
  role: 'coordinator' | 'worker';
  /** TLS flags (coherent: checked when parsed). */
  tls?: TlsFlags;
  /** Said at start: the node runs open beyond loopback (--insecure). */
  exposureWarning?: string;
  /** The lint's warnings on these flags (`clink lint` prints the same), logged at start. */
  configWarnings?: { check: string; message: string }[];
  ha?: HaFlags;
  readyFile?: string;
  httpPort?: number;
  /** A coordinator's console build to serve at / (--http-static-dir). */
  httpStaticDir?: string;
  /** A coordinator's SQL catalog directory (--sql-catalog-dir). */
  sqlCatalogDir?: string;
  /** Export metrics and spans over OTLP/HTTP (--otlp-endpoint, --otlp-interval-ms). */
  otlp?: { endpoint: string; intervalMs: number };
  coordinator: Partial<CoordinatorConfig>;
  worker: Partial<WorkerConfig>;
  /** How a worker reconnects after losing the coordinator. */
  reconnect?: Partial<ReconnectPolicy>;
}

/**
 * Resolves on SIGTERM or SIGINT, or, for a node started by a parent over an IPC channel (a test
 * harness, `clink run`), when that parent goes away however it ended: a node never outlives it.
 */
export function terminationSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (why: string): void => {
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      process.off('disconnect', onParentGone);
      resolve(why);
    };
    const onTerm = (): void => on('SIGTERM');
    const onInt = (): void => on('SIGINT');
    const onParentGone = (): void => on('the parent process exited');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    if (process.connected) process.once('disconnect', onParentGone);
    // Started over a channel that is closed already: the parent went away while this node was loading.
    else if (process.send !== undefined) onParentGone();
  });
}

export async function startHttp(
  port: number | undefined,
  log: Logger,
  deps: Parameters<typeof buildHttpApp>[0],
  host: string,
  hostFlag: string,
): Promise<{ port: number; url: string; close: () => Promise<void> } | undefined> {
  if (port === undefined) return undefined;
  const app = buildHttpApp(deps);
  try {
    await app.listen({ port, host });
  } catch (err) {
    await app.close();
    throw listenError(err, host, port, { port: '--http-port', host: hostFlag });
  }
  const actual = (app.server.address() as { port: number }).port;
  const url = `http://${host}:${actual}`;
  log.info(`HTTP API on ${url}`);
  return { port: actual, url, close: () => app.close() };
}

export async function writeReadyFile(path: string, ports: Record<string, number | string | number[]>): Promise<void> {
  try {
    await writeFileAtomic(path, JSON.stringify(ports));
  } catch (err) {
    throw new EnvironmentError(`cannot write the ready file ${path} (--ready-file): ${(err as Error).message}`, {
      cause: err,
    });
  }
}
