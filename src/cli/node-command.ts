/** `clink node`: the flags of a coordinator or worker node, checked, and handed to node.ts. */
import { type Command, Option } from 'commander';
import { authTokenFromEnv } from '../util/index.js';
import { exposureVerdict } from './exposure.js';
import { checkTlsFlags, nonNegativeInt, positiveInt, renamed, renamedFlag, slotSharingOption } from './flags.js';
import type { TlsFlags, TlsRole } from './tls-flags.js';

/** Add the `node` command; its exit code (0 after a graceful stop) goes to `setExitCode`. */
export function addNodeCommand(program: Command, setExitCode: (code: number) => void): void {
  program
  .command('node')
  .description('run a cluster node: a coordinator or a worker')
  .addOption(new Option('--role <role>', 'what this node is').choices(['coordinator', 'worker']).makeOptionMandatory())
  .option('--ready-file <path>', 'when listening, write {"controlPort":N,"httpPort":M} here')
  .option('--http-port <n>', 'serve the HTTP API on this port (0 picks one)', nonNegativeInt)
  .option('--http-static-dir <dir>', 'a coordinator: serve this built console at / instead of the one clink ships')
  .option('--sql-catalog-dir <dir>', "a coordinator: keep the SQL session's permanent tables and views here (catalog.json) [default: in memory]")
  .option('--otlp-endpoint <host[:port]>', "export metrics and spans over OTLP/HTTP to this collector (port 4318 when absent; off without it)")
  .option('--otlp-interval-ms <ms>', 'how often metrics are exported over OTLP', positiveInt, 10_000)
  // coordinator
  .option('--port <n>', 'coordinator: control port (0 picks one)', nonNegativeInt, 6123)
  .option('--bind-host <host>', 'coordinator: address to listen on', '127.0.0.1')
  .option('--advertise-host <host>', 'coordinator: the host it publishes [default: bind host]')
  .option('--ha-dir <dir>', 'high availability: a coordinator stands for leadership by a lock in this directory and persists its jobs there; a worker finds the leader there')
  .option('--ha-allow-unsafe-locks', 'coordinator: stand for leadership even where the lock probe finds the directory grants one lock to two processes (warns)', false)
  .option('--etcd-endpoints <urls>', 'high availability through etcd: leader election (coordinator) or leader discovery (worker), comma-separated', (v: string) => v.split(',').filter(Boolean))
  .option('--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys', 'default')
  .option('--etcd-lease-ttl-s <s>', 'coordinator: the etcd lease; a leader frozen this long loses leadership', positiveInt, 10)
  .option('--heartbeat-timeout-ms <ms>', 'coordinator: a worker is lost after this long without a frame', positiveInt, 2_000)
  .option('--watchdog-interval-ms <ms>', 'coordinator: how often liveness is judged', positiveInt, 100)
  .option('--handshake-timeout-ms <ms>', 'coordinator: added to the heartbeat timeout, the deadline for a TLS handshake and a first frame; worker: its TCP connect and TLS handshake must finish within this', nonNegativeInt, 5_000)
  .option('--tls-cert <file>', 'TLS: the certificate (PEM) of the coordinator\'s control port, or of a worker\'s data port')
  .option('--tls-key <file>', 'TLS: its private key (PEM)')
  .option('--tls-client-ca <file>', 'coordinator: mTLS: require client certificates this CA signed (PEM); a worker id belongs to the certificate that registered it')
  .option('--tls-ca <file>', 'worker: verify the coordinator and data peers against this CA (PEM)')
  .option('--tls-client-cert <file>', 'worker: under mTLS, its certificate (PEM)')
  .option('--tls-client-key <file>', 'worker: under mTLS, its private key (PEM)')
  .option('--tls-no-verify-hostname', "worker: check certificate chains but not that they name the host (needs --tls-ca)")
  .option('--insecure', 'run on a non-loopback address without TLS or CLINK_AUTH_TOKEN (refused otherwise; warned at every start)', false)
  .option('--max-pending-connections <n>', 'coordinator: connections admitted at once', nonNegativeInt, 64)
  .option('--outbound-stall-timeout-ms <ms>', 'coordinator: a worker whose frames make no progress this long is lost (0 = off)', nonNegativeInt, 10_000)
  .option('--outbound-flush-timeout-ms <ms>', 'coordinator: how long shutdown lets queued frames be written', nonNegativeInt, 1_000)
  .option('--max-outbound-control-frames <n>', 'coordinator: control frames queued per worker', positiveInt, 10_000)
  .option('--max-outbound-control-bytes <n>', 'coordinator: bytes of control frames queued per worker', positiveInt, 64 * 1024 * 1024)
  .option('--max-outbound-bulk-bytes <n>', 'coordinator: bytes of Deploy frames queued per worker', positiveInt, 1024 * 1024 * 1024)
  .addOption(slotSharingOption('coordinator: '))
  .option('--submit-wait-for-slots-ms <ms>', 'coordinator: how long a submit waits for free slots', nonNegativeInt, 0)
  .option('--restart-drain-timeout-ms <ms>', "coordinator: a restart fails the job when a survivor has not drained by then", positiveInt, 120_000)
  .option('--restart-capacity-timeout-ms <ms>', 'coordinator: how long a restart waits for free slots', nonNegativeInt, 180_000)
  .option('--restart-budget-reset-after-ms <ms>', 'coordinator: a checkpoint this long after the last restart forgives the restarts spent', positiveInt, 600_000)
  .option('--max-region-retries <n>', "coordinator: default retries of each failed subtask of a job without checkpoints (its failover region re-runs from the beginning)", nonNegativeInt, 0)
  .addOption(renamedFlag('--max-restarts <n>', 'maxRegionRetries', nonNegativeInt))
  .option('--restart-backoff-initial-ms <ms>', "coordinator: a job's second restart (or retry) waits this long, each later one twice as long", nonNegativeInt, 1_000)
  .option('--restart-backoff-max-ms <ms>', 'coordinator: the longest wait between restarts of a job', nonNegativeInt, 60_000)
  .option('--max-client-sessions <n>', 'coordinator: client sessions open at once; more are refused as busy', positiveInt, 256)
  .option('--client-idle-timeout-ms <ms>', 'coordinator: a client session with no request (and no job of its own running) is closed after this long', positiveInt, 300_000)
  .option('--max-client-outbound-bytes <n>', "coordinator: unread reply bytes a client may have queued before it is dropped", positiveInt, 16 * 1024 * 1024)
  .option('--frame-body-timeout-ms <ms>', 'coordinator: a frame begun on a session must be complete within this long of its first byte', positiveInt, 30_000)
  // worker
  .option('--id <id>', 'worker: stable worker id [default: host-pid]')
  .option('--coordinator-host <host>', 'worker: the coordinator host', '127.0.0.1')
  .option('--coordinator-port <n>', 'worker: the coordinator port', positiveInt, 6123)
  .option('--slots <n>', 'worker: subtasks it runs at once', positiveInt, 1)
  .option('--data-host <host>', 'worker: the host other workers reach its data port on', '127.0.0.1')
  .option('--heartbeat-interval-ms <ms>', 'worker: heartbeat period', positiveInt, 500)
  .option('--peer-update-timeout-ms <ms>', 'worker: how long a deployed subtask waits for its peers', positiveInt, 30_000)
  .option('--coordinator-heartbeat-timeout-ms <ms>', 'worker: end the session when a v2 coordinator sends nothing this long (0 = off)', nonNegativeInt, 3_000)
  .option('--reconnect-initial-backoff-ms <ms>', 'worker: first wait before registering again after losing the coordinator', positiveInt, 100)
  .option('--reconnect-max-backoff-ms <ms>', 'worker: longest wait between registration attempts (full jitter below it)', positiveInt, 5_000)
  .option('--batch-size <n>', 'worker: records per batch between tasks', positiveInt, 1_000)
  .option('--batch-linger-ms <ms>', 'worker: how long a partly filled batch may wait to fill', nonNegativeInt, 0)
  .addOption(new Option('--task-isolation <mode>', "worker: where user code runs: a thread per job (its heartbeats never wait on it), or none (the session's event loop)").choices(['thread', 'none']).default('thread'))
  .option('--task-stall-timeout-ms <ms>', "worker: a job's thread that makes no progress this long is terminated and its subtasks fail", positiveInt, 30_000)
  .option('--task-heap-mb <mb>', "worker: heap limit of each job's thread; past it its subtasks fail with 'out of memory'", positiveInt, 2_048)
  .action(async (o: Record<string, unknown>, cmd: Command) => {
    const n = (k: string): number => o[k] as number;
    checkTlsFlags(cmd, o as TlsFlags, o.role as TlsRole);
    const exposure = exposureVerdict({
      role: o.role as 'coordinator' | 'worker',
      hosts:
        o.role === 'coordinator'
          ? [
              { host: o.bindHost as string, flag: '--bind-host' },
              { host: (o.advertiseHost as string | undefined) ?? '', flag: '--advertise-host' },
            ]
          : [{ host: o.dataHost as string, flag: '--data-host' }],
      tls: o.role === 'coordinator' ? o.tlsCert !== undefined : o.tlsCa !== undefined,
      token: authTokenFromEnv() !== undefined,
      insecure: o.insecure === true,
    });
    if (exposure.refusal) cmd.error(`error: ${exposure.refusal}`);
    if (o.role === 'coordinator' && o.etcdEndpoints && !o.haDir) {
      cmd.error("error: --etcd-endpoints needs --ha-dir too: the directory (shared by every coordinator) where running jobs are persisted for a successor");
    }
    const { nodeCommand } = await import('./node.js');
    setExitCode(await nodeCommand({
      role: o.role as 'coordinator' | 'worker',
      tls: o as TlsFlags,
      ...(exposure.warning ? { exposureWarning: exposure.warning } : {}),
      ha: {
        ...(o.haDir ? { haDir: o.haDir as string } : {}),
        allowUnsafeLocks: o.haAllowUnsafeLocks === true,
        ...(o.etcdEndpoints ? { etcdEndpoints: o.etcdEndpoints as string[] } : {}),
        etcdCluster: o.etcdCluster as string,
        etcdLeaseTtlS: n('etcdLeaseTtlS'),
      },
      ...(o.readyFile ? { readyFile: o.readyFile as string } : {}),
      ...(o.httpPort !== undefined ? { httpPort: n('httpPort') } : {}),
      ...(o.httpStaticDir ? { httpStaticDir: o.httpStaticDir as string } : {}),
      ...(o.sqlCatalogDir ? { sqlCatalogDir: o.sqlCatalogDir as string } : {}),
      ...(o.otlpEndpoint ? { otlp: { endpoint: o.otlpEndpoint as string, intervalMs: n('otlpIntervalMs') } } : {}),
      coordinator: {
        port: n('port'),
        bindHost: o.bindHost as string,
        advertiseHost: (o.advertiseHost as string | undefined) ?? '',
        heartbeatTimeoutMs: n('heartbeatTimeoutMs'),
        watchdogIntervalMs: n('watchdogIntervalMs'),
        handshakeTimeoutMs: n('handshakeTimeoutMs'),
        maxPendingConnections: Math.max(1, n('maxPendingConnections')),
        outboundStallTimeoutMs: n('outboundStallTimeoutMs'),
        outboundFlushTimeoutMs: n('outboundFlushTimeoutMs'),
        maxOutboundControlFrames: n('maxOutboundControlFrames'),
        maxOutboundControlBytes: n('maxOutboundControlBytes'),
        maxOutboundBulkBytes: n('maxOutboundBulkBytes'),
        submitWaitForSlotsMs: n('submitWaitForSlotsMs'),
        slotSharing: o.slotSharing === 'on',
        restartDrainTimeoutMs: n('restartDrainTimeoutMs'),
        restartCapacityTimeoutMs: n('restartCapacityTimeoutMs'),
        restartBudgetResetAfterMs: n('restartBudgetResetAfterMs'),
        maxRegionRetries: renamed(o, 'maxRegionRetries', 'maxRestarts'),
        maxClientSessions: n('maxClientSessions'),
        clientIdleTimeoutMs: n('clientIdleTimeoutMs'),
        maxClientOutboundBytes: n('maxClientOutboundBytes'),
        frameBodyTimeoutMs: n('frameBodyTimeoutMs'),
        restartBackoffInitialMs: n('restartBackoffInitialMs'),
        restartBackoffMaxMs: n('restartBackoffMaxMs'),
      },
      worker: {
        ...(o.id ? { id: o.id as string } : {}),
        coordinatorHost: o.coordinatorHost as string,
        coordinatorPort: n('coordinatorPort'),
        slots: n('slots'),
        dataHost: o.dataHost as string,
        heartbeatIntervalMs: n('heartbeatIntervalMs'),
        peerUpdateTimeoutMs: n('peerUpdateTimeoutMs'),
        batchSize: n('batchSize'),
        batchLingerMs: n('batchLingerMs'),
        coordinatorHeartbeatTimeoutMs: n('coordinatorHeartbeatTimeoutMs'),
        taskIsolation: o.taskIsolation as 'thread' | 'none',
        taskStallTimeoutMs: n('taskStallTimeoutMs'),
        taskHeapMb: n('taskHeapMb'),
      },
      reconnect: { initialBackoffMs: n('reconnectInitialBackoffMs'), maxBackoffMs: n('reconnectMaxBackoffMs') },
    }));
  });
}
