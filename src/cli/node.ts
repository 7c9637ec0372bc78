/** `clink node --role=coordinator|worker`: a long-lived cluster node. */
import { hostname } from 'node:os';
import { Coordinator, DEFAULT_COORDINATOR_CONFIG, type CoordinatorConfig } from '../coordinator/index.js';
import { buildHttpApp } from '../http/index.js';
import { createLogger, type Logger } from '../log/index.js';
import { ClinkMetrics } from '../metrics/index.js';
import { DEFAULT_COORDINATOR_HEARTBEAT_TIMEOUT_MS, WorkerSupervisor, type ReconnectPolicy, type WorkerConfig } from '../worker/index.js';
import { writeFileAtomic } from './files.js';
import { EnvironmentError, listenError } from '../errors.js';
import { DEFAULT_BATCH_SIZE } from '../runtime/index.js';

export interface NodeFlags {
  role: 'coordinator' | 'worker';
  readyFile?: string;
  httpPort?: number;
  coordinator: Partial<CoordinatorConfig>;
  worker: Partial<WorkerConfig>;
  /** How a worker reconnects after losing the coordinator. */
  reconnect?: Partial<ReconnectPolicy>;
}

/**
 * Resolves on SIGTERM or SIGINT, or, for a node started by a parent over an IPC channel (a test
 * harness, `clink run`), when that parent goes away however it ended: a node never outlives it.
 */
function terminationSignal(): Promise<string> {
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
  });
}

async function startHttp(
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

async function writeReadyFile(path: string, ports: Record<string, number>): Promise<void> {
  try {
    await writeFileAtomic(path, JSON.stringify(ports));
  } catch (err) {
    throw new EnvironmentError(`cannot write the ready file ${path} (--ready-file): ${(err as Error).message}`, { cause: err });
  }
}

export async function nodeCommand(flags: NodeFlags): Promise<number> {
  const log = createLogger({ name: flags.role });
  const metrics = new ClinkMetrics();
  const signal = terminationSignal();
  if (flags.role === 'coordinator') {
    const coordinator = await Coordinator.start(flags.coordinator, { log, metrics });
    let http: Awaited<ReturnType<typeof startHttp>>;
    try {
      http = await startHttp(flags.httpPort, log, { role: 'coordinator', metrics, config: coordinator.config as unknown as Record<string, unknown>, coordinator }, coordinator.config.bindHost, '--bind-host');
    } catch (err) {
      await coordinator.stop();
      throw err;
    }
    coordinator.httpUrl = http?.url;
    try {
      if (flags.readyFile) await writeReadyFile(flags.readyFile, { controlPort: coordinator.port, httpPort: http?.port ?? 0 });
    } catch (err) {
      await coordinator.stop();
      await http?.close();
      throw err;
    }
    const sig = await signal;
    log.info(`${sig}: stopping`);
    await coordinator.stop();
    await http?.close();
    return 0;
  }
  const config: WorkerConfig = {
    id: flags.worker.id ?? `${hostname()}-${process.pid}`,
    coordinatorHost: flags.worker.coordinatorHost ?? '127.0.0.1',
    coordinatorPort: flags.worker.coordinatorPort ?? DEFAULT_COORDINATOR_CONFIG.port,
    slots: flags.worker.slots ?? 1,
    dataHost: flags.worker.dataHost ?? '127.0.0.1',
    heartbeatIntervalMs: flags.worker.heartbeatIntervalMs ?? 500,
    peerUpdateTimeoutMs: flags.worker.peerUpdateTimeoutMs ?? 30_000,
    batchSize: flags.worker.batchSize ?? DEFAULT_BATCH_SIZE,
    batchLingerMs: flags.worker.batchLingerMs ?? 0,
    coordinatorHeartbeatTimeoutMs: flags.worker.coordinatorHeartbeatTimeoutMs ?? DEFAULT_COORDINATOR_HEARTBEAT_TIMEOUT_MS,
    ...(flags.worker.taskIsolation ? { taskIsolation: flags.worker.taskIsolation } : {}),
    ...(flags.worker.taskStallTimeoutMs ? { taskStallTimeoutMs: flags.worker.taskStallTimeoutMs } : {}),
    ...(flags.worker.taskHeapMb ? { taskHeapMb: flags.worker.taskHeapMb } : {}),
    ...(flags.httpPort !== undefined ? { httpPort: flags.httpPort } : {}),
  };
  let supervisor: WorkerSupervisor | undefined;
  // The HTTP port outlives sessions; health is 503 while the worker has none.
  const health = (): { ok: boolean; status: string } => (supervisor?.connected ? { ok: true, status: 'ok' } : { ok: false, status: 'reconnecting' });
  const http = await startHttp(flags.httpPort, log, { role: 'worker', metrics, config: config as unknown as Record<string, unknown>, health }, config.dataHost, '--data-host');
  if (http) config.httpPort = http.port;
  // Each session listens on a data port of its own: the ready file follows the current one.
  const writeReady = async (w: { dataPort: number }): Promise<void> => {
    if (flags.readyFile) await writeReadyFile(flags.readyFile, { dataPort: w.dataPort, httpPort: http?.port ?? 0 });
  };
  // Not awaited: a worker still looking for its coordinator stops on a signal like any other.
  supervisor = WorkerSupervisor.launch(config, { log, metrics }, flags.reconnect ?? {}, writeReady);
  const outcome = await Promise.race([signal.then((sig) => ({ sig })), supervisor.ended.then((end) => ({ end }))]);
  if ('sig' in outcome) log.info(`${outcome.sig}: cancelling every task and stopping`);
  await supervisor.close();
  await http?.close();
  if ('end' in outcome && outcome.end.reason === 'incompatible') throw new EnvironmentError(`worker ${config.id} cannot join the coordinator: ${outcome.end.detail}`);
  return 0;
}
