/**
 * The defaults of every setting a node (`clink node`) takes, made here once: the coordinator's and the
 * worker's configs are these tables filled in, and each flag's default is read from them by its name
 * (cli/node-flag-table.ts), so help text, lint, the HTTP API's config and a node started from code agree.
 * Plain values with no imports: the CLI reads them at start without loading the coordinator.
 */

const MiB = 1024 * 1024;

/** The coordinator's control port when none is given (Flink's jobmanager.rpc.port). */
export const DEFAULT_CONTROL_PORT = 6123;
/** The host a node listens on, and a worker looks for its coordinator on, when none is given. */
export const DEFAULT_HOST = '127.0.0.1';
/** A TCP connect and TLS handshake (and a new connection's first frame, past the heartbeat timeout). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5_000;
/** What every connection's partial frames may hold together: one largest frame. */
export const DEFAULT_MAX_INFLIGHT_FRAME_BYTES = 256 * MiB;

/** Settings of the coordinator with a default, by their CoordinatorConfig names (docs there). */
export const COORDINATOR_DEFAULTS = Object.freeze({
  port: DEFAULT_CONTROL_PORT,
  bindHost: DEFAULT_HOST,
  advertiseHost: '',
  heartbeatTimeoutMs: 2_000,
  watchdogIntervalMs: 100,
  handshakeTimeoutMs: DEFAULT_HANDSHAKE_TIMEOUT_MS,
  maxPendingConnections: 64,
  outboundStallTimeoutMs: 10_000,
  outboundFlushTimeoutMs: 1_000,
  maxOutboundControlFrames: 10_000,
  maxOutboundControlBytes: 64 * MiB,
  maxOutboundBulkBytes: 1024 * MiB,
  submitWaitForSlotsMs: 0,
  slotSharing: true,
  restartDrainTimeoutMs: 120_000,
  restartCapacityTimeoutMs: 180_000,
  restartBudgetResetAfterMs: 10 * 60_000,
  connectorCheckTimeoutMs: 5_000,
  maxRegionRetries: 0,
  /** Where a job's keyed state lives when its submit does not say (Flink's state.backend.type: hashmap). */
  defaultStateBackendType: 'heap' as 'heap' | 'disk',
  maxWorkerSessions: 1_024,
  maxInflightFrameBytes: DEFAULT_MAX_INFLIGHT_FRAME_BYTES,
  maxClientSessions: 256,
  clientIdleTimeoutMs: 5 * 60_000,
  maxClientOutboundBytes: 16 * MiB,
  frameBodyTimeoutMs: 30_000,
  restartBackoffInitialMs: 1_000,
  restartBackoffMaxMs: 60_000,
  autoscaleSustainMs: 30_000,
  autoscaleCooldownMs: 60_000,
  autoscaleMaxChangesPerHour: 6,
  autoscaleLagRecords: 10_000,
});

/** Settings of a worker with a default, by their WorkerConfig names (docs there). */
export const WORKER_DEFAULTS = Object.freeze({
  coordinatorHost: DEFAULT_HOST,
  coordinatorPort: DEFAULT_CONTROL_PORT,
  slots: 1,
  dataHost: DEFAULT_HOST,
  heartbeatIntervalMs: 500,
  peerUpdateTimeoutMs: 30_000,
  connectTimeoutMs: DEFAULT_HANDSHAKE_TIMEOUT_MS,
  batchSize: 1_000,
  batchLingerMs: 0,
  /** Buffer debloating's target, Flink's taskmanager.network.memory.buffer-debloat.target when enabled (1 s); 0: off, as Flink's default. */
  debloatTargetMs: 0,
  coordinatorHeartbeatTimeoutMs: 3_000,
  taskIsolation: 'thread' as 'thread' | 'none',
  taskStallTimeoutMs: 30_000,
  taskHeapMb: 2_048,
  /** Where the disk state backend keeps its stores; empty: clink-state in the system's temp dir (as Flink's io.tmp.dirs). */
  localStateDir: '',
  /** Decoded values the disk state backend caches per state and subtask (DEFAULT_DISK_CACHE_ENTRIES in state/disk-table.ts). */
  stateCacheEntries: 65_536,
  /** 64 MB semi-spaces (V8's own default is at most 16 MB for each); docs/performance-history.md has what it saves. */
  taskYoungGenerationMb: 192,
  dataTransport: 'link' as 'link' | 'channel',
  maxInflightFrameBytes: DEFAULT_MAX_INFLIGHT_FRAME_BYTES,
});

/** How a worker that lost its coordinator registers again: full jitter below an exponential bound. */
export const RECONNECT_DEFAULTS = Object.freeze({ initialBackoffMs: 100, maxBackoffMs: 5_000 });

/** High availability through etcd: the key namespace and the leader's lease. */
export const HA_DEFAULTS = Object.freeze({ etcdCluster: 'default', etcdLeaseTtlS: 10 });

/** OTLP export period. */
export const OTLP_DEFAULTS = Object.freeze({ intervalMs: 10_000 });
