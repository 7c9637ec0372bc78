/** `clink node --role=coordinator|worker`: a long-lived cluster node. */
import { hostname } from 'node:os';
import { Coordinator } from '../coordinator/index.js';
import { createLogger } from '../log/index.js';
import { ClinkMetrics, loadOtlp } from '../metrics/index.js';
import { DEFAULT_WORKER_CONFIG, WorkerSupervisor } from '../worker/index.js';
import { haCoordinator } from './ha-node.js';
import { startHttp, terminationSignal, writeReadyFile, type NodeFlags } from './node-process.js';
export type { NodeFlags, HaFlags } from './node-process.js';
import { EnvironmentError } from '../errors.js';
import { leaderSource } from '../ha/index.js';
import { authTokenFromEnv, withDefaults } from '../util/index.js';
import { loadTls } from './tls-flags.js';

export async function nodeCommand(flags: NodeFlags): Promise<number> {
  const log = createLogger({ name: flags.role });
  const metrics = new ClinkMetrics();
  // OTLP export (--otlp-endpoint): loaded only when asked for, since the OpenTelemetry SDK is large.
  const otlp = flags.otlp
    ? (await loadOtlp()).startOtlp(
        {
          ...flags.otlp,
          serviceName: `clink-${flags.role}`,
          ...(flags.worker?.id ? { instanceId: flags.worker?.id } : {}),
        },
        metrics,
        log,
      )
    : undefined;
  try {
    const signal = terminationSignal();
    // Read once, from the environment only: a flag would show it in ps.
    const authToken = authTokenFromEnv();
    if (flags.exposureWarning) log.warn(flags.exposureWarning);
    for (const w of flags.configWarnings ?? []) log.warn({ check: w.check }, `configuration: ${w.message}`);
    const tls = flags.tls ? await loadTls(flags.tls, flags.role) : {};
    const security = {
      ...(authToken ? { authToken } : {}),
      ...(tls.server ? { tls: tls.server } : {}),
      ...(otlp ? { tracer: otlp.tracer } : {}),
    };
    if (flags.role === 'coordinator' && (flags.ha?.haDir || flags.ha?.etcdEndpoints?.length))
      return haCoordinator(flags, log, metrics, signal, security);
    if (flags.role === 'coordinator') {
      const coordinator = await Coordinator.start(flags.coordinator, { log, metrics, ...security });
      let http: Awaited<ReturnType<typeof startHttp>>;
      try {
        http = await startHttp(
          flags.httpPort,
          log,
          {
            role: 'coordinator',
            metrics,
            config: { ...coordinator.config, warnings: flags.configWarnings ?? [] },
            coordinator,
            ...(authToken ? { authToken } : {}),
            ...(flags.httpStaticDir ? { staticDir: flags.httpStaticDir } : {}),
            ...(flags.sqlCatalogDir ? { sqlCatalogDir: flags.sqlCatalogDir } : {}),
          },
          coordinator.config.bindHost,
          '--bind-host',
        );
      } catch (err) {
        await coordinator.stop();
        throw err;
      }
      coordinator.httpUrl = http?.url;
      try {
        if (flags.readyFile)
          await writeReadyFile(flags.readyFile, { controlPort: coordinator.port, httpPort: http?.port ?? 0 });
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
    const config = withDefaults(DEFAULT_WORKER_CONFIG, {
      ...flags.worker,
      id: flags.worker.id ?? `${hostname()}-${process.pid}`,
      httpPort: flags.httpPort,
      connectTimeoutMs: flags.coordinator.handshakeTimeoutMs,
    });
    let supervisor: WorkerSupervisor | undefined;
    // The HTTP port outlives sessions; health is 503 while the worker has none.
    const health = (): { ok: boolean; status: string } =>
      supervisor?.connected ? { ok: true, status: 'ok' } : { ok: false, status: 'reconnecting' };
    const http = await startHttp(
      flags.httpPort,
      log,
      {
        role: 'worker',
        metrics,
        config: { ...config, warnings: flags.configWarnings ?? [] },
        health,
        worker: () => supervisor?.describe(),
        ...(authToken ? { authToken } : {}),
      },
      config.dataHost,
      '--data-host',
    );
    if (http) config.httpPort = http.port;
    // Each session listens on a data port of its own: the ready file follows the current one.
    const writeReady = async (w: { dataPort: number; jobDataPorts: number[] }): Promise<void> => {
      if (flags.readyFile)
        await writeReadyFile(flags.readyFile, {
          dataPort: w.dataPort,
          jobDataPorts: w.jobDataPorts,
          httpPort: http?.port ?? 0,
        });
    };
    // Not awaited: a worker still looking for its coordinator stops on a signal like any other.
    const leader = leaderSource({
      ...(flags.ha?.haDir ? { haDir: flags.ha.haDir } : {}),
      ...(flags.ha?.etcdEndpoints ? { etcdEndpoints: flags.ha.etcdEndpoints } : {}),
      ...(flags.ha?.etcdCluster ? { etcdCluster: flags.ha.etcdCluster } : {}),
    });
    if (leader) log.info(`finding the coordinator through ${leader.describe} before every session`);
    supervisor = WorkerSupervisor.launch(
      config,
      { log, metrics, ...(authToken ? { authToken } : {}), ...(tls.client || tls.server ? { tls } : {}) },
      flags.reconnect ?? {},
      writeReady,
      leader,
    );
    const outcome = await Promise.race([signal.then((sig) => ({ sig })), supervisor.ended.then((end) => ({ end }))]);
    if ('sig' in outcome) log.info(`${outcome.sig}: cancelling every task and stopping`);
    await supervisor.close();
    leader?.close();
    await http?.close();
    if ('end' in outcome && outcome.end.reason === 'incompatible')
      throw new EnvironmentError(`worker ${config.id} cannot join the coordinator: ${outcome.end.detail}`);
    return 0;
  } finally {
    await otlp?.close();
  }
}
