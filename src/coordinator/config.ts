/** The coordinator's settings, with the reference's defaults. */
import { COORDINATOR_DEFAULTS } from '../config/index.js';

export const COORDINATOR_HISTORY_CAP = 128;
/** Self-heal attempts of a checkpointing job that sets no --max-restarts-from-checkpoint. */
export const DEFAULT_SELF_HEAL_RESTARTS = 10;
/** The most collect() results a job may return through the coordinator. */
export const MAX_JOB_COLLECTED_BYTES = 64 * 1024 * 1024;

export interface CoordinatorConfig {
  /** Control port; 0 picks a free one. @default 6123 */
  port: number;
  /** @default 127.0.0.1 */
  bindHost: string;
  /** The host published for this coordinator; empty means bindHost. */
  advertiseHost: string;
  /** A worker is lost after this long without a frame. @default 2,000 */
  heartbeatTimeoutMs: number;
  /** @default 100 */
  watchdogIntervalMs: number;
  /** Added to heartbeatTimeoutMs, the deadline for a new connection's first frame. @default 5,000 */
  handshakeTimeoutMs: number;
  /** Connections being admitted at once; past it the least advanced of the busiest address is evicted, or the newcomer refused (admission.ts). @default 64 */
  maxPendingConnections: number;
  /** A worker whose frames make no progress for this long is lost; 0 or less turns it off. @default 10,000 */
  outboundStallTimeoutMs: number;
  /** How long stop() lets outboxes write what is queued. @default 1,000 */
  outboundFlushTimeoutMs: number;
  /** @default 10,000 */
  maxOutboundControlFrames: number;
  /** @default 64 MiB */
  maxOutboundControlBytes: number;
  /** @default 1 GiB */
  maxOutboundBulkBytes: number;
  /** How long a submit waits for free slots; 0 refuses at once. @default 0 */
  submitWaitForSlotsMs: number;
  /**
   * Slot sharing as in Flink: a slot holds one subtask of each task of a slot sharing group, so a job
   * needs, per group, as many slots as its widest task. false: one slot per subtask.
   */
  slotSharing: boolean;
  /** A restart fails the job when a surviving subtask has neither drained nor died by then. @default 120,000 */
  restartDrainTimeoutMs: number;
  /** How long a restart waits for enough free slots. @default 180,000 */
  restartCapacityTimeoutMs: number;
  /** A checkpoint completing this long after the last restart forgives the restarts spent. @default 600,000 */
  restartBudgetResetAfterMs: number;
  /**
   * At submit, each built-in connector checks its external system (reachable, topic/table/stream there,
   * credentials accepted) within this long; 0 turns the checks off. @default 5,000
   */
  connectorCheckTimeoutMs: number;
  /**
   * In a job without checkpoints, how often each subtask may fail and be retried (its failover region
   * re-run from the beginning) before the job fails; a job's own (`--max-region-retries` on submit) overrides it. @default 0
   */
  maxRegionRetries: number;
  /** Where a job's keyed state lives when its submit says 'default'. @default 'heap' */
  defaultStateBackendType: 'heap' | 'disk';
  /** Coordinator epoch stamped on every frame to workers; 0 = unfenced (no HA). @default 0 */
  epoch: number;
  /** Worker sessions open at once; a Register of a new worker past it is refused as busy (retryable). @default 1,024 */
  maxWorkerSessions: number;
  /**
   * What every connection's partial frames may hold together: a peer whose frame would take the sum past
   * it is cut. @default 256 MiB (one largest frame)
   */
  maxInflightFrameBytes: number;
  /** Client sessions open at once; a HelloClient past it is refused ("coordinator busy"). @default 256 */
  maxClientSessions: number;
  /** A client session with no request for this long, and no job of its own running, is closed. @default 300,000 */
  clientIdleTimeoutMs: number;
  /** Unread reply bytes a client may have queued before it is dropped. @default 16 MiB */
  maxClientOutboundBytes: number;
  /** A frame begun on an admitted session must be complete within this long of its first byte. @default 30,000 */
  frameBodyTimeoutMs: number;
  /**
   * Exponential backoff between restarts (and retries) of one job: the first is immediate, the second
   * waits this long, each later one twice the one before, up to restartBackoffMaxMs. @default 1,000
   */
  restartBackoffInitialMs: number;
  /** @default 60,000 */
  restartBackoffMaxMs: number;
  /** Autoscaler (a job submitted with --autoscale): how long a signal must hold before it acts. @default 30,000 */
  autoscaleSustainMs: number;
  /** Autoscaler: quiet time after a job's rescale (or start). @default 60,000 */
  autoscaleCooldownMs: number;
  /** Autoscaler: rescales of one job allowed in any hour. @default 6 */
  autoscaleMaxChangesPerHour: number;
  /** Autoscaler: sources this many records behind their input, and not catching up, scale a job out. @default 10,000 */
  autoscaleLagRecords: number;
}

export const DEFAULT_COORDINATOR_CONFIG: Readonly<CoordinatorConfig> = Object.freeze({
  ...COORDINATOR_DEFAULTS,
  epoch: 0,
});
