/**
 * The flags of `clink node`, each marked with the role that reads it, and the NodeFlags they mean: one
 * table that `clink node` and `clink lint` both parse with, so the lint's verdict on a node's command
 * line (node-lint.ts) is the node's own. Loaded by every command: it imports no checks.
 */
import { type Command, Option } from 'commander';
import {
  COORDINATOR_DEFAULTS,
  HA_DEFAULTS,
  OTLP_DEFAULTS,
  RECONNECT_DEFAULTS,
  WORKER_DEFAULTS,
} from '../config/index.js';
import { nonNegativeInt, positiveInt, renamed, renamedFlag, slotSharingOption } from './flags.js';
import type { NodeFlags } from './node-process.js';
import { STATE_BACKEND_TYPES } from '../protocol/index.js';
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
type Parse = (v: string) => number;
const opt = (flags: string, description: string, parse?: Parse, def?: unknown): Option => {
  const o = new Option(flags, description);
  if (parse) o.argParser(parse);
  if (def !== undefined) o.default(def);
  return o;
};

type Defaults = Readonly<Record<string, unknown>>;
/** Reconnect settings by their flag's name (--reconnect-initial-backoff-ms sets initialBackoffMs). */
const reconnectKey = (k: string): string => `reconnect${k[0]!.toUpperCase()}${k.slice(1)}`;
const RECONNECT_FLAG_DEFAULTS: Defaults = Object.fromEntries(
  Object.entries(RECONNECT_DEFAULTS).map(([k, v]) => [reconnectKey(k), v]),
);

/** An option whose default is the setting of its own name in `defaults` (config/node-defaults.ts): never a literal here. */
function defaulted(defaults: Defaults, flags: string, description: string, parse?: Parse): Option {
  const o = opt(flags, description, parse);
  const key = o.attributeName();
  if (!(key in defaults)) throw new Error(`${o.long}: no default named ${key} in its table`);
  return o.default(defaults[key]);
}
const OTLP_FLAG_DEFAULTS: Defaults = { otlpIntervalMs: OTLP_DEFAULTS.intervalMs };
const c = (flags: string, description: string, parse?: Parse): NodeOption =>
  coordinator(defaulted(COORDINATOR_DEFAULTS, flags, description, parse));
const w = (flags: string, description: string, parse?: Parse): NodeOption =>
  worker(defaulted(WORKER_DEFAULTS, flags, description, parse));
const cw = (flags: string, description: string, parse?: Parse): NodeOption =>
  both(defaulted(COORDINATOR_DEFAULTS, flags, description, parse));

/** Every flag of `clink node` but --role. */
export const nodeOptions = (): NodeOption[] => [
  both(opt('--ready-file <path>', 'when listening, write {"controlPort":N,"httpPort":M} here')),
  both(opt('--http-port <n>', 'serve the HTTP API on this port (0 picks one)', nonNegativeInt)),
  coordinator(
    opt('--http-static-dir <dir>', 'a coordinator: serve this built console at / instead of the one clink ships'),
  ),
  coordinator(
    opt(
      '--sql-catalog-dir <dir>',
      "a coordinator: keep the SQL session's permanent tables and views here (catalog.json) [default: in memory]",
    ),
  ),
  both(
    opt(
      '--otlp-endpoint <host[:port]>',
      'export metrics and spans over OTLP/HTTP to this collector (port 4318 when absent; off without it)',
    ),
  ),
  both(
    defaulted(OTLP_FLAG_DEFAULTS, '--otlp-interval-ms <ms>', 'how often metrics are exported over OTLP', positiveInt),
  ),
  c('--port <n>', 'coordinator: control port (0 picks one)', nonNegativeInt),
  c('--bind-host <host>', 'coordinator: address to listen on'),
  coordinator(opt('--advertise-host <host>', 'coordinator: the host it publishes [default: bind host]')),
  both(
    opt(
      '--ha-dir <dir>',
      'high availability: a coordinator stands for leadership by a lock in this directory and persists its jobs there; a worker finds the leader there',
    ),
  ),
  coordinator(
    opt(
      '--ha-allow-unsafe-locks',
      'coordinator: stand for leadership even where the lock probe finds the directory grants one lock to two processes (warns)',
      undefined,
      false,
    ),
  ),
  both(
    new Option(
      '--etcd-endpoints <urls>',
      'high availability through etcd: leader election (coordinator) or leader discovery (worker), comma-separated',
    ).argParser((v: string) => v.split(',').filter(Boolean)),
  ),
  both(defaulted(HA_DEFAULTS, '--etcd-cluster <name>', 'the cluster name that namespaces the etcd keys')),
  coordinator(
    defaulted(
      HA_DEFAULTS,
      '--etcd-lease-ttl-s <s>',
      'coordinator: the etcd lease; a leader frozen this long loses leadership',
      positiveInt,
    ),
  ),
  c('--heartbeat-timeout-ms <ms>', 'coordinator: a worker is lost after this long without a frame', positiveInt),
  c('--watchdog-interval-ms <ms>', 'coordinator: how often liveness is judged', positiveInt),
  cw(
    '--handshake-timeout-ms <ms>',
    'coordinator: added to the heartbeat timeout, the deadline for a TLS handshake and a first frame; worker: its TCP connect and TLS handshake must finish within this',
    nonNegativeInt,
  ),
  both(
    opt(
      '--tls-cert <file>',
      "TLS: the certificate (PEM) of the coordinator's control port, or of a worker's data port",
    ),
  ),
  both(opt('--tls-key <file>', 'TLS: its private key (PEM)')),
  coordinator(
    opt(
      '--tls-client-ca <file>',
      'coordinator: mTLS: require client certificates this CA signed (PEM); a worker id belongs to the certificate that registered it',
    ),
  ),
  worker(opt('--tls-ca <file>', 'worker: verify the coordinator and data peers against this CA (PEM)')),
  worker(opt('--tls-client-cert <file>', 'worker: under mTLS, its certificate (PEM)')),
  worker(opt('--tls-client-key <file>', 'worker: under mTLS, its private key (PEM)')),
  worker(
    opt(
      '--tls-no-verify-hostname',
      'worker: check certificate chains but not that they name the host (needs --tls-ca)',
    ),
  ),
  both(
    opt(
      '--insecure',
      'run on a non-loopback address without TLS or CLINK_AUTH_TOKEN (refused otherwise; warned at every start)',
      undefined,
      false,
    ),
  ),
  c('--max-pending-connections <n>', 'coordinator: connections admitted at once', nonNegativeInt),
  c(
    '--outbound-stall-timeout-ms <ms>',
    'coordinator: a worker whose frames make no progress this long is lost (0 = off)',
    nonNegativeInt,
  ),
  c('--outbound-flush-timeout-ms <ms>', 'coordinator: how long shutdown lets queued frames be written', nonNegativeInt),
  c('--max-outbound-control-frames <n>', 'coordinator: control frames queued per worker', nonNegativeInt),
  c('--max-outbound-control-bytes <n>', 'coordinator: bytes of control frames queued per worker', nonNegativeInt),
  c('--max-outbound-bulk-bytes <n>', 'coordinator: bytes of Deploy frames queued per worker', nonNegativeInt),
  both(slotSharingOption('coordinator: ')),
  coordinator(
    new Option(
      '--default-state-backend-type <type>',
      "coordinator: where a job's keyed state lives when its submit does not say: heap or disk (Flink's state.backend.type)",
    )
      .choices(STATE_BACKEND_TYPES)
      .default(COORDINATOR_DEFAULTS.defaultStateBackendType),
  ),
  c('--submit-wait-for-slots-ms <ms>', 'coordinator: how long a submit waits for free slots', nonNegativeInt),
  c(
    '--restart-drain-timeout-ms <ms>',
    'coordinator: a restart fails the job when a survivor has not drained by then',
    positiveInt,
  ),
  c('--restart-capacity-timeout-ms <ms>', 'coordinator: how long a restart waits for free slots', nonNegativeInt),
  c(
    '--connector-check-timeout-ms <ms>',
    'coordinator: at submit each connector checks its external system (reachable, topic, table or stream there) within this long (0 = no checks)',
    nonNegativeInt,
  ),
  c(
    '--restart-budget-reset-after-ms <ms>',
    'coordinator: a checkpoint this long after the last restart forgives the restarts spent',
    positiveInt,
  ),
  c(
    '--max-region-retries <n>',
    'coordinator: default retries of each failed subtask of a job without checkpoints (its failover region re-runs from the beginning)',
    nonNegativeInt,
  ),
  coordinator(renamedFlag('--max-restarts <n>', 'maxRegionRetries', nonNegativeInt)),
  c(
    '--restart-backoff-initial-ms <ms>',
    "coordinator: a job's second restart (or retry) waits this long, each later one twice as long",
    nonNegativeInt,
  ),
  c('--restart-backoff-max-ms <ms>', 'coordinator: the longest wait between restarts of a job', nonNegativeInt),
  c(
    '--autoscale-sustain-ms <ms>',
    'coordinator: the autoscaler acts on backpressure or idleness that has held this long',
    positiveInt,
  ),
  c(
    '--autoscale-cooldown-ms <ms>',
    'coordinator: the autoscaler leaves a job alone this long after its last rescale (or start)',
    nonNegativeInt,
  ),
  c(
    '--autoscale-max-changes-per-hour <n>',
    'coordinator: rescales the autoscaler may make to one job in any hour',
    positiveInt,
  ),
  c(
    '--autoscale-lag-records <n>',
    'coordinator: the autoscaler scales a job out when its sources stay this many records behind their input without catching up',
    positiveInt,
  ),
  c(
    '--max-worker-sessions <n>',
    'coordinator: worker sessions open at once; a new worker past it is refused as busy and retries',
    positiveInt,
  ),
  cw(
    '--max-inflight-frame-bytes <n>',
    "bytes every connection's partial frames may hold together; a peer whose frame would pass it is cut",
    positiveInt,
  ),
  c('--max-client-sessions <n>', 'coordinator: client sessions open at once; more are refused as busy', positiveInt),
  c(
    '--client-idle-timeout-ms <ms>',
    'coordinator: a client session with no request (and no job of its own running) is closed after this long',
    positiveInt,
  ),
  c(
    '--max-client-outbound-bytes <n>',
    'coordinator: unread reply bytes a client may have queued before it is dropped',
    positiveInt,
  ),
  c(
    '--frame-body-timeout-ms <ms>',
    'coordinator: a frame begun on a session must be complete within this long of its first byte',
    positiveInt,
  ),
  worker(opt('--id <id>', 'worker: stable worker id [default: host-pid]')),
  w('--coordinator-host <host>', 'worker: the coordinator host'),
  w('--coordinator-port <n>', 'worker: the coordinator port', positiveInt),
  w('--slots <n>', 'worker: subtasks it runs at once', positiveInt),
  w('--data-host <host>', 'worker: the host other workers reach its data port on'),
  w('--heartbeat-interval-ms <ms>', 'worker: heartbeat period', positiveInt),
  w('--peer-update-timeout-ms <ms>', 'worker: how long a deployed subtask waits for its peers', positiveInt),
  w(
    '--coordinator-heartbeat-timeout-ms <ms>',
    'worker: end the session when a v2 coordinator sends nothing this long (0 = off)',
    nonNegativeInt,
  ),
  worker(
    defaulted(
      RECONNECT_FLAG_DEFAULTS,
      '--reconnect-initial-backoff-ms <ms>',
      'worker: first wait before registering again after losing the coordinator',
      positiveInt,
    ),
  ),
  worker(
    defaulted(
      RECONNECT_FLAG_DEFAULTS,
      '--reconnect-max-backoff-ms <ms>',
      'worker: longest wait between registration attempts (full jitter below it)',
      positiveInt,
    ),
  ),
  w('--batch-size <n>', 'worker: records per batch between tasks', positiveInt),
  w('--batch-linger-ms <ms>', 'worker: how long a partly filled batch may wait to fill', nonNegativeInt),
  w(
    '--debloat-target-ms <ms>',
    'worker: buffer debloating, size batches so a task has about this much work queued (0: off)',
    nonNegativeInt,
  ),
  worker(
    new Option(
      '--task-isolation <mode>',
      "worker: where user code runs: a thread per job (its heartbeats never wait on it), or none (the session's event loop)",
    )
      .choices(['thread', 'none'])
      .default(WORKER_DEFAULTS.taskIsolation),
  ),
  w(
    '--task-stall-timeout-ms <ms>',
    "worker: a job's thread that makes no progress this long is terminated and its subtasks fail",
    positiveInt,
  ),
  worker(
    new Option(
      '--data-transport <mode>',
      'worker: how its channels to other workers travel: one data link per peer carrying all of them (to peers that take links), or a connection per channel (and it takes no links)',
    )
      .choices(['link', 'channel'])
      .default(WORKER_DEFAULTS.dataTransport),
  ),
  w(
    '--task-heap-mb <mb>',
    "worker: heap limit of each job's thread; past it its subtasks fail with 'out of memory'",
    positiveInt,
  ),
  worker(
    new Option(
      '--local-state-dir <dir>',
      'worker: where jobs on the disk state backend keep their stores (a working copy, removed when the job leaves; checkpoints are the durable one)',
    ),
  ),
  w(
    '--state-cache-entries <n>',
    'worker: decoded values the disk state backend keeps in memory per state and subtask (hot keys); the rest are read from its store',
    positiveInt,
  ),
  w(
    '--task-young-generation-mb <mb>',
    "worker: V8 young generation of each job's thread (records that die in it cost no promotion)",
    positiveInt,
  ),
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

/** The values of `o` named like the settings in `defaults` (given or defaulted), keyed by setting. */
function settings(
  o: Record<string, unknown>,
  defaults: Defaults,
  flagName: (key: string) => string = (k) => k,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(defaults)
      .map((k) => [k, o[flagName(k)]])
      .filter(([, v]) => v !== undefined),
  );
}

/** The NodeFlags a parsed `clink node` command line means (TLS and exposure not yet checked). */
export function nodeFlagsOf(o: Record<string, unknown>): NodeFlags {
  const ha = settings(o, HA_DEFAULTS) as Partial<typeof HA_DEFAULTS>;
  return {
    role: o.role as NodeRole,
    tls: o as TlsFlags,
    ha: {
      ...ha,
      ...(o.haDir ? { haDir: o.haDir as string } : {}),
      allowUnsafeLocks: o.haAllowUnsafeLocks === true,
      ...(o.etcdEndpoints ? { etcdEndpoints: o.etcdEndpoints as string[] } : {}),
    },
    ...(o.readyFile ? { readyFile: o.readyFile as string } : {}),
    ...(o.httpPort !== undefined ? { httpPort: o.httpPort as number } : {}),
    ...(o.httpStaticDir ? { httpStaticDir: o.httpStaticDir as string } : {}),
    ...(o.sqlCatalogDir ? { sqlCatalogDir: o.sqlCatalogDir as string } : {}),
    ...(o.otlpEndpoint ? { otlp: { endpoint: o.otlpEndpoint as string, intervalMs: o.otlpIntervalMs as number } } : {}),
    coordinator: {
      ...settings(o, COORDINATOR_DEFAULTS),
      advertiseHost: (o.advertiseHost as string | undefined) ?? '',
      maxPendingConnections: Math.max(1, o.maxPendingConnections as number),
      slotSharing: o.slotSharing === 'on',
      maxRegionRetries: renamed(o, 'maxRegionRetries', 'maxRestarts'),
    },
    worker: {
      ...settings(o, WORKER_DEFAULTS),
      // Empty: clink-state in the system's temp dir (a default that depends on the machine is not shown).
      localStateDir: (o.localStateDir as string | undefined) ?? '',
      ...(o.id ? { id: o.id as string } : {}),
    },
    reconnect: settings(o, RECONNECT_DEFAULTS, reconnectKey),
  };
}
