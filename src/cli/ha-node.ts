/**
 * `clink node --role=coordinator --ha-dir DIR` (or `--etcd-endpoints`): a coordinator that stands for
 * leadership. As a standby it serves its HTTP API (health says `standby` and names the leader) with
 * its control port closed. Elected, it sets its epoch before the listener opens, announces where it
 * listens, and takes over the jobs its predecessor persisted. If it loses leadership it stops the
 * coordinator at once (a successor may already lead) and stands again as a standby.
 */
import { hostname } from 'node:os';
import { DEFAULT_HOST } from '../config/index.js';
import { Coordinator } from '../coordinator/index.js';
import { EtcdElection, FileElection, HaJobStore, type LeaderElection, type LeaderInfo } from '../ha/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { TlsServerConfig } from '../net/index.js';
import { startHttp, writeReadyFile, type NodeFlags } from './node-process.js';

/** How long a node that lost leadership waits before it stands again. */
const RESTAND_DELAY_MS = 1_000;

function makeElection(flags: NodeFlags, log: Logger, host: string): LeaderElection {
  const ha = flags.ha!;
  if (ha.etcdEndpoints?.length) {
    return new EtcdElection({
      endpoints: ha.etcdEndpoints,
      cluster: ha.etcdCluster ?? 'default',
      ...(ha.etcdLeaseTtlS ? { leaseTtlS: ha.etcdLeaseTtlS } : {}),
      host,
      log,
    });
  }
  return new FileElection({ dir: ha.haDir!, host, log, ...(ha.allowUnsafeLocks ? { allowUnsafeLocks: true } : {}) });
}

export async function haCoordinator(
  flags: NodeFlags,
  log: Logger,
  metrics: ClinkMetrics,
  signal: Promise<string>,
  security: { authToken?: string; tls?: TlsServerConfig },
): Promise<number> {
  const { authToken } = security;
  // The CLI refuses --etcd-endpoints without --ha-dir: the job store lives in the HA directory.
  const haDir = flags.ha!.haDir!;
  const bindHost = flags.coordinator.bindHost ?? DEFAULT_HOST;
  const host = flags.coordinator.advertiseHost || bindHost;
  let coordinator: Coordinator | undefined;
  let election: LeaderElection | undefined;
  let leader: LeaderInfo | undefined;
  const http = await startHttp(
    flags.httpPort,
    log,
    {
      role: 'coordinator',
      metrics,
      config: {
        ...flags.coordinator,
        haDir,
        ...(flags.ha?.etcdEndpoints ? { etcdEndpoints: flags.ha.etcdEndpoints } : {}),
        warnings: flags.configWarnings ?? [],
      },
      coordinator: () => coordinator,
      ...(authToken ? { authToken } : {}),
      ...(flags.httpStaticDir ? { staticDir: flags.httpStaticDir } : {}),
      ...(flags.sqlCatalogDir ? { sqlCatalogDir: flags.sqlCatalogDir } : {}),
      health: () =>
        coordinator
          ? { ok: true, status: 'ok', leader: true }
          : {
              ok: true,
              status: 'standby',
              ...(leader ? { leader: { host: leader.host, port: leader.port, epoch: leader.epoch } } : {}),
            },
    },
    bindHost,
    '--bind-host',
  );
  const ready = (state: string, controlPort: number, epoch: number): Promise<void> =>
    flags.readyFile
      ? writeReadyFile(flags.readyFile, { controlPort, httpPort: http?.port ?? 0, state, epoch })
      : Promise.resolve();

  // Stand, lead, lose, stand again: until a signal, or a failure no new election can mend (the
  // control port cannot be listened on, say), which ends the node.
  let stopped = false;
  let lost: ((why: string) => void) | undefined;
  let failed: ((err: unknown) => void) | undefined;
  const stand = async (): Promise<void> => {
    const e = (election = makeElection(flags, log, `${host}-${hostname()}`));
    const lostLeadership = new Promise<string>((resolve) => (lost = resolve));
    const fatal = new Promise<never>((_, reject) => (failed = reject));
    fatal.catch(() => undefined);
    e.onLoseLeadership((why) => lost?.(why));
    e.onBecomeLeader(async (epoch) => {
      if (stopped) return;
      try {
        // The epoch is set before the listener opens: no frame of this leader goes out without it.
        coordinator = await Coordinator.start(
          { ...flags.coordinator, epoch },
          { log, metrics, jobStore: new HaJobStore(haDir, epoch), ...security },
        );
        coordinator.httpUrl = http?.url;
        await e.announce({ host, port: coordinator.port, ...(http ? { httpUrl: http.url } : {}) });
        await ready('leader', coordinator.port, epoch);
        log.info({ epoch, port: coordinator.port }, `leading at epoch ${epoch} on ${host}:${coordinator.port}`);
      } catch (err) {
        failed?.(err);
        return;
      }
      // A takeover that fails as a whole (the job store unreadable) leaves this node leading an empty cluster: say so.
      await coordinator
        .takeOver()
        .catch((err: unknown) =>
          log.error({ err }, `could not take over the persisted jobs: ${(err as Error).message}; they are not running`),
        );
    });
    await ready('standby', 0, 0);
    await e.start();
    leader = await e.currentLeader().catch(() => undefined);
    if (!e.isLeader)
      log.info(
        leader
          ? `standby: following the leader at ${leader.host}:${leader.port} (epoch ${leader.epoch})`
          : 'standby: no leader announced yet',
      );
    // What health reports of the leader is read again every second while this node stands by.
    const refresh = setInterval(
      () =>
        void e.currentLeader().then(
          (l) => (leader = l),
          () => undefined,
        ),
      1_000,
    );
    refresh.unref();
    let why: string;
    try {
      why = await Promise.race([lostLeadership, fatal]).finally(() => clearInterval(refresh));
    } catch (err) {
      await coordinator?.stop();
      coordinator = undefined;
      await e.close();
      throw err;
    }
    if (stopped) return;
    log.error(`lost leadership: ${why}; stopping this coordinator (a successor may already lead) and standing again`);
    const c = coordinator;
    coordinator = undefined;
    await c?.stop();
    await e.close();
    // Standing again at once after a failure to take leadership (a full disk) would spin.
    await new Promise((r) => setTimeout(r, RESTAND_DELAY_MS));
  };
  const loop = (async () => {
    while (!stopped) await stand();
  })();
  const sig = await Promise.race([signal, loop.then(() => 'stopped')]);
  stopped = true;
  log.info(`${sig}: stopping`);
  lost?.('stopping');
  await coordinator?.stop();
  await election?.close();
  await http?.close();
  return 0;
}
