/**
 * The flags of `clink node`, each marked with the role that reads it, and the NodeFlags they mean: one
 * table that `clink node` and `clink lint` both parse with, so the lint's verdict on a node's command
 * line (node-checks.ts) is the node's own. Loaded by every command: it imports no checks.
 */
import { type Command, Option } from 'commander';
import { nonNegativeInt, positiveInt, renamed, renamedFlag, slotSharingOption } from './flags.js';
import type { NodeFlags } from './node-support.js';
import type { TlsFlags } from './tls-flags.js';

export type NodeRole = 'coordinator' | 'worker';
/** A node flag and the role that reads it ('both': either). */
export interface NodeOption {
  option: Option;
  role: NodeRole | 'both';
}

const both = (option: Option): NodeOption => ({ option, role: 'both' });
const coordinator = (option: Option): NodeOption => ({ option, role: 'coordinator' });
const worker = (option: Option): NodeOption => ({ option, role: 'worker' });
const opt = (flags: string, description: string, parse?: (v: string) => number, def?: unknown): Option => {
  const o = new Option(flags, description);
  if (parse) o.argParser(parse);
  if (def !== undefined) o.default(def);
  return o;
};

/** Every flag of `clink node` but --role. */
export const nodeOptions = (): NodeOption[] => [
  both(opt('--ready-file <path>', 'when listening, write {"controlPort":N,"httpPort":M} here')),
  both(opt('--http-port <n>', 'serve the HTTP API on this port (0 picks one)', nonNegativeInt)),
  coordinator(opt('--http-static-dir <dir>', 'a coordinator: serve this built console at / instead of the one clink ships')),
  coordinator(opt('--sql-catalog-dir <dir>', "a coordinator: keep the SQL session's permanent tables and views here (catalog.json) [default: in memory]")),
  both(opt('--otlp-endpoint <host[:port]>', 'export metrics and spans over OTLP/HTTP to this collector (port 4318 when absent; off without it)')),
  both(opt('--otlp-interval-ms <ms>', 'how often metrics are exported over OTLP', positiveInt, 10_000)),
  coordinator(opt('--port <n>', 'coordinator: control port (0 picks one)', nonNegativeInt, 6123)),
  coordinator(opt('--bind-host <host>', 'coordinator: address to listen on', undefined, '127.0.0.1')),
  coordinator(opt('--advertise-host <host>', 'coordinator: the host it publishes [default: bind host]')),
  both(opt('--ha-dir <dir>', 'high availability: a coordinator stands for leadership by a lock in this directory and persists its jobs there; a worker finds the leader there')),
  coordinator(opt('--ha-allow-unsafe-locks', 'coordinator: stand for leadership even where the lock probe finds the directory grants one lock to two processes (warns)', undefined, false)),
  both(new Option('--etcd-endpoints <urls>', 'high availability through etcd: leader election (coordinator) or leader discovery (worker), comma-separated').argParser((v: string) => v.split(',').filter(Boolean))),
  both(opt('--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys', undefined, 'default')),
  coordinator(opt('--etcd-lease-ttl-s <s>', 'coordinator: the etcd lease; a leader frozen this long loses leadership', positiveInt, 10)),
  coordinator(opt('--heartbeat-timeout-ms <ms>', 'coordinator: a worker is lost after this long without a frame', positiveInt, 2_000)),
  coordinator(opt('--watchdog-interval-ms <ms>', 'coordinator: how often liveness is judged', positiveInt, 100)),
  both(
    opt(
      '--handshake-timeout-ms <ms>',
      'coordinator: added to the heartbeat timeout, the deadline for a TLS handshake and a first frame; worker: its TCP connect and TLS handshake must finish within this',
      nonNegativeInt,
      5_000,
    ),
  ),
  both(opt('--tls-cert <file>', "TLS: the certificate (PEM) of the coordinator's control port, or of a worker's data port")),
  both(opt('--tls-key <file>', 'TLS: its private key (PEM)')),
  coordinator(opt('--tls-client-ca <file>', 'coordinator: mTLS: require client certificates this CA signed (PEM); a worker id belongs to the certificate that registered it')),
  worker(opt('--tls-ca <file>', 'worker: verify the coordinator and data peers against this CA (PEM)')),
  worker(opt('--tls-client-cert <file>', 'worker: under mTLS, its certificate (PEM)')),
  worker(opt('--tls-client-key <file>', 'worker: under mTLS, its private key (PEM)')),
  worker(opt('--tls-no-verify-hostname', 'worker: check certificate chains but not that they name the host (needs --tls-ca)')),
  both(opt('--insecure', 'run on a non-loopback address without TLS or CLINK_AUTH_TOKEN (refused otherwise; warned at every start)', undefined, false)),
  coordinator(opt('--max-pending-connections <n>', 'coordinator: connections admitted at once', nonNegativeInt, 64)),
  coordinator(opt('--outbound-stall-timeout-ms <ms>', 'coordinator: a worker whose frames make no progress this long is lost (0 = off)', nonNegativeInt, 10_000)),
  coordinator(opt('--outbound-flush-timeout-ms <ms>', 'coordinator: how long shutdown lets queued frames be written', nonNegativeInt, 1_000)),
  coordinator(opt('--max-outbound-control-frames <n>', 'coordinator: control frames queued per worker', nonNegativeInt, 10_000)),
  coordinator(opt('--max-outbound-control-bytes <n>', 'coordinator: bytes of control frames queued per worker', nonNegativeInt, 64 * 1024 * 1024)),
  coordinator(opt('--max-outbound-bulk-bytes <n>', 'coordinator: bytes of Deploy frames queued per worker', nonNegativeInt, 1024 * 1024 * 1024)),
  both(slotSharingOption('coordinator: ')),
  coordinator(opt('--submit-wait-for-slots-ms <ms>', 'coordinator: how long a submit waits for free slots', nonNegativeInt, 0)),
  coordinator(opt('--restart-drain-timeout-ms <ms>', 'coordinator: a restart fails the job when a survivor has not drained by then', positiveInt, 120_000)),
  coordinator(opt('--restart-capacity-timeout-ms <ms>', 'coordinator: how long a restart waits for free slots', nonNegativeInt, 180_000)),
  coordinator(opt('--connector-check-timeout-ms <ms>', "coordinator: at submit each connector checks its external system (reachable, topic, table or stream there) within this long (0 = no checks)", nonNegativeInt, 5_000)),
  coordinator(opt('--restart-budget-reset-after-ms <ms>', 'coordinator: a checkpoint this long after the last restart forgives the restarts spent', positiveInt, 600_000)),
  coordinator(opt('--max-region-retries <n>', "coordinator: default retries of each failed subtask of a job without checkpoints (its failover region re-runs from the beginning)", nonNegativeInt, 0)),
  coordinator(renamedFlag('--max-restarts <n>', 'maxRegionRetries', nonNegativeInt)),
  coordinator(opt('--restart-backoff-initial-ms <ms>', "coordinator: a job's second restart (or retry) waits this long, each later one twice as long", nonNegativeInt, 1_000)),
  coordinator(opt('--restart-backoff-max-ms <ms>', 'coordinator: the longest wait between restarts of a job', nonNegativeInt, 60_000)),
  coordinator(opt('--autoscale-sustain-ms <ms>', 'coordinator: the autoscaler acts on backpressure or idleness that has held this long', positiveInt, 30_000)),
  coordinator(opt('--autoscale-cooldown-ms <ms>', "coordinator: the autoscaler leaves a job alone this long after its last rescale (or start)", nonNegativeInt, 60_000)),
  coordinator(opt('--autoscale-max-changes-per-hour <n>', 'coordinator: rescales the autoscaler may make to one job in any hour', positiveInt, 6)),
  coordinator(opt('--autoscale-lag-records <n>', "coordinator: the autoscaler scales a job out when its sources stay this many records behind their input without catching up", positiveInt, 10_000)),
  coordinator(opt('--max-worker-sessions <n>', 'coordinator: worker sessions open at once; a new worker past it is refused as busy and retries', positiveInt, 1_024)),
  both(opt('--max-inflight-frame-bytes <n>', "bytes every connection's partial frames may hold together; a peer whose frame would pass it is cut", positiveInt, 256 * 1024 * 1024)),
  coordinator(opt('--max-client-sessions <n>', 'coordinator: client sessions open at once; more are refused as busy', positiveInt, 256)),
  coordinator(opt('--client-idle-timeout-ms <ms>', 'coordinator: a client session with no request (and no job of its own running) is closed after this long', positiveInt, 300_000)),
  coordinator(opt('--max-client-outbound-bytes <n>', 'coordinator: unread reply bytes a client may have queued before it is dropped', positiveInt, 16 * 1024 * 1024)),
  coordinator(opt('--frame-body-timeout-ms <ms>', 'coordinator: a frame begun on a session must be complete within this long of its first byte', positiveInt, 30_000)),
  worker(opt('--id <id>', 'worker: stable worker id [default: host-pid]')),
  worker(opt('--coordinator-host <host>', 'worker: the coordinator host', undefined, '127.0.0.1')),
  worker(opt('--coordinator-port <n>', 'worker: the coordinator port', positiveInt, 6123)),
  worker(opt('--slots <n>', 'worker: subtasks it runs at once', positiveInt, 1)),
  worker(opt('--data-host <host>', 'worker: the host other workers reach its data port on', undefined, '127.0.0.1')),
  worker(opt('--heartbeat-interval-ms <ms>', 'worker: heartbeat period', positiveInt, 500)),
  worker(opt('--peer-update-timeout-ms <ms>', 'worker: how long a deployed subtask waits for its peers', positiveInt, 30_000)),
  worker(opt('--coordinator-heartbeat-timeout-ms <ms>', 'worker: end the session when a v2 coordinator sends nothing this long (0 = off)', nonNegativeInt, 3_000)),
  worker(opt('--reconnect-initial-backoff-ms <ms>', 'worker: first wait before registering again after losing the coordinator', positiveInt, 100)),
  worker(opt('--reconnect-max-backoff-ms <ms>', 'worker: longest wait between registration attempts (full jitter below it)', positiveInt, 5_000)),
  worker(opt('--batch-size <n>', 'worker: records per batch between tasks', positiveInt, 1_000)),
  worker(opt('--batch-linger-ms <ms>', 'worker: how long a partly filled batch may wait to fill', nonNegativeInt, 0)),
  worker(new Option('--task-isolation <mode>', "worker: where user code runs: a thread per job (its heartbeats never wait on it), or none (the session's event loop)").choices(['thread', 'none']).default('thread')),
  worker(opt('--task-stall-timeout-ms <ms>', "worker: a job's thread that makes no progress this long is terminated and its subtasks fail", positiveInt, 30_000)),
  worker(new Option('--data-transport <mode>', 'worker: how its channels to other workers travel: one data link per peer carrying all of them (to peers that take links), or a connection per channel (and it takes no links)').choices(['link', 'channel']).default('link')),
  worker(opt('--task-heap-mb <mb>', "worker: heap limit of each job's thread; past it its subtasks fail with 'out of memory'", positiveInt, 2_048)),
  worker(opt('--task-young-generation-mb <mb>', "worker: V8 young generation of each job's thread (records that die in it cost no promotion)", positiveInt, 192)),
];

/** The node flags given on the command line or through the environment (not defaulted), with their roles. */
export function givenNodeFlags(cmd: Command): { flag: string; role: NodeRole | 'both' }[] {
  return nodeOptions()
    .filter((n) => {
      const source = cmd.getOptionValueSource(n.option.attributeName());
      return source === 'cli' || source === 'env';
    })
    .map((n) => ({ flag: n.option.long!, role: n.role }));
}

/** The NodeFlags a parsed `clink node` command line means (TLS and exposure not yet checked). */
export function nodeFlagsOf(o: Record<string, unknown>): NodeFlags {
  const n = (k: string): number => o[k] as number;
  return {
    role: o.role as NodeRole,
    tls: o as TlsFlags,
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
      connectorCheckTimeoutMs: n('connectorCheckTimeoutMs'),
      maxRegionRetries: renamed(o, 'maxRegionRetries', 'maxRestarts'),
      maxWorkerSessions: n('maxWorkerSessions'),
      maxInflightFrameBytes: n('maxInflightFrameBytes'),
      maxClientSessions: n('maxClientSessions'),
      clientIdleTimeoutMs: n('clientIdleTimeoutMs'),
      maxClientOutboundBytes: n('maxClientOutboundBytes'),
      frameBodyTimeoutMs: n('frameBodyTimeoutMs'),
      restartBackoffInitialMs: n('restartBackoffInitialMs'),
      restartBackoffMaxMs: n('restartBackoffMaxMs'),
      autoscaleSustainMs: n('autoscaleSustainMs'),
      autoscaleCooldownMs: n('autoscaleCooldownMs'),
      autoscaleMaxChangesPerHour: n('autoscaleMaxChangesPerHour'),
      autoscaleLagRecords: n('autoscaleLagRecords'),
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
      taskYoungGenerationMb: n('taskYoungGenerationMb'),
      dataTransport: o.dataTransport as 'link' | 'channel',
      maxInflightFrameBytes: n('maxInflightFrameBytes'),
    },
    reconnect: { initialBackoffMs: n('reconnectInitialBackoffMs'), maxBackoffMs: n('reconnectMaxBackoffMs') },
  };
}
