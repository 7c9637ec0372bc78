/**
 * What the coordinator knows of workers and jobs: a worker's session and its slots, a job's state (its
 * subtasks, checkpoints, restarts and retries), and the views the API shows of them.
 */
import type { FrameConnection, Outbox } from '../net/index.js';
import { failoverRegions, type JobGraphSpec, type PhysicalPlan } from '../plan/index.js';
import type { MessageOf } from '../protocol/index.js';
import type { CompletedMarker } from './checkpoint-storage.js';
import type { ClientSession } from './client-sessions.js';
import type { JobGuarantee } from '../connectors/index.js';
import type { JobStateName } from './job-lifecycle.js';
import type { AutoscaleRecord, JobAutoscale } from './autoscaler.js';
import type { SubtaskSample } from './task-metrics.js';
import type { Span } from '../metrics/index.js';
import type { CheckpointCoordinator } from './checkpoint-coordinator.js';
import type { CheckpointFailure } from './checkpoint-ports.js';

export type { CheckpointFailure };

/** A rescale carried out (drain and replan): what changed, from which checkpoint, and how long the job paused. */
export interface JobRescale {
  /** When it was asked for, and when the job stopped (its checkpoint completed, the drain began). */
  requestedAt: number;
  at: number;
  /** When the new attempt was deployed, and when it was running again (absent until it is). */
  deployedAt: number;
  runningAt?: number;
  /** Each task whose parallelism changed: `<task> <from> -> <to>`. */
  changes: string[];
  /** The checkpoint it restored from (the one it took). */
  restoredFrom: number;
  attempt: number;
  /** Who asked: a client, the HTTP API, the autoscaler (with its reason). */
  cause: string;
  /** How: every task stopped and deployed again, or only the changed ones replaced while the rest ran on. */
  mode: RescaleMode;
}

export type RescaleMode = 'drain-and-replan' | 'hot-cutover';

/** A hot rescale in progress (hot-rescale.ts): periodic checkpoints and savepoints wait, retirements are expected. */
export interface JobCutover {
  rescaleId: number;
  /** The new subtasks have all reported their ports and been told their peers. */
  connected?: () => void;
}

/** A rescale between its checkpoint and its redeploy: the plan the job is deployed with next. */
export interface StagedRescale {
  spec: JobGraphSpec;
  plan: PhysicalPlan;
  specJson: string;
  buildParallelism: number;
  parallelismOf: Record<string, number>;
  changes: string[];
  checkpointId: number;
  requestedAt: number;
  cause: string;
}

/** One restart of a job after a worker loss. */
export interface JobRestart {
  /** When the loss was acted on (the survivors told to stop). */
  at: number;
  /** When the next attempt was deployed. */
  deployedAt: number;
  cause: string;
  /** The checkpoint the restarted run resumed from; 0 when none had completed (it started over). */
  restoredFrom: number;
  /** The deploy attempt it started. */
  attempt: number;
}

/** One retry of a failed subtask's failover region, in a job without checkpoints. */
export interface JobRetry {
  /** When the failure was acted on (the region told to stop). */
  at: number;
  /** When the region was deployed again. */
  deployedAt: number;
  /** The subtask whose failure started it (`<task>#<index>`), and the worker it ran on. */
  subtask: string;
  workerId: string;
  cause: string;
  /** This subtask's retries so far, this one included. */
  retry: number;
  /** The subtasks re-run from the beginning (the failover region). */
  subtasks: number;
  /** The deploy attempt the region runs as. */
  attempt: number;
}

export interface WorkerSession {
  id: string;
  session: number;
  /** Job modules this session has been sent; later Deploys refer to them by hash. */
  shippedModules: Set<string>;
  admissionId: number;
  conn: FrameConnection;
  outbox: Outbox;
  slots: number;
  /** The slots charged, `<jobId>/<slot>` -> subtasks sharing it here; its size is the slots in use. */
  slotShares: Map<string, number>;
  dataHost: string;
  httpPort: number;
  runtime: string;
  /** The protocol it speaks (what it can be sent). */
  protocolVersion: number;
  registeredAt: number;
  lastSeen: number;
  /** retiring: replaced by a new registration, its connection read to the end before it is retired. */
  state: 'active' | 'retiring' | 'lost' | 'retired';
  lostCause?: string;
  /** Who registered it: under mTLS its certificate's name ('' otherwise). A live id is not taken over by another. */
  credential: string;
}

export function freeSlots(s: WorkerSession): number {
  return Math.max(0, s.slots - s.slotShares.size);
}

export function releaseSlot(s: WorkerSession, key: string): void {
  const n = (s.slotShares.get(key) ?? 0) - 1;
  if (n > 0) s.slotShares.set(key, n);
  else s.slotShares.delete(key);
}

export interface SubtaskState {
  taskId: string;
  index: number;
  session: WorkerSession;
  /** The slot it shares within its job (see placement). */
  slot: string;
  /** The deploy attempt it runs as (a retry redeploys part of a job under a new one). */
  attempt: number;
  listening?: MessageOf<'SubtaskListening'>['edgePorts'];
  /** Its process takes data links (SubtaskListening.dataLinks): its upstreams may send on one. */
  dataLinks?: boolean;
  /** Its PeerUpdate has gone: it is running. */
  started?: boolean;
  /** What its collect() sinks gathered (msgpack), kept until the job completes. */
  collected?: Uint8Array;
  finished: boolean;
  /** A hot rescale replaces it: its clean end is expected, not the job's. */
  retiring?: boolean;
  error?: string;
  recordsIn: number;
  recordsOut: number;
}

export interface JobState {
  id: string;
  name: string;
  spec: JobGraphSpec;
  plan: PhysicalPlan;
  specJson: string;
  module: CachedModule;
  params: string;
  buildParallelism: number;
  state: JobStateName;
  startedAt: number;
  runningAt?: number;
  finishedAt?: number;
  error?: string;
  subtasks: SubtaskState[];
  client?: ClientSession;
  collectedBytes: number;
  progress: Map<string, { sourceRecords: number; sinkRecords: number }>;
  /** Each running subtask's last two heartbeat reports, by subtask key (the API's per-task rates). */
  subtaskProgress: Map<string, SubtaskSample>;
  /** A subtask failed because a peer went away; held briefly for the verdict on that peer. */
  peerFailure?: { error: string; at: number; subtask: string };
  /** Data-plane channels between subtasks in one process (pointer passes) and across processes (sockets). */
  edges: { local: number; socket: number };
  checkpoint: MessageOf<'SubmitJob'>['checkpoint'];
  /**
   * The restore point the job was submitted with (a savepoint, or a predecessor's checkpoint). Until the
   * job completes a checkpoint of its own, every restart and retry resumes from it, never from nothing.
   */
  submittedRestore?: CompletedMarker;
  /** Its checkpoint coordinator: the checkpoint in flight, the completed ones, the confirmed commits. */
  readonly checkpointing: CheckpointCoordinator;
  /** The deploy attempt running: 0 at submit, one more at each restart. */
  attempt: number;
  restarts: JobRestart[];
  /** Rescales carried out; they spend no restart budget. */
  rescales: JobRescale[];
  /** While RESCALING: the plan it is deployed with next. */
  rescaling?: StagedRescale;
  /** While a hot rescale rewires it (it stays RUNNING). */
  cutover?: JobCutover;
  /** Its autoscaler (submitted with --autoscale min..max). */
  autoscale?: JobAutoscale;
  /** Operators' parallelism set by rescales (`--operator uid=N`), kept across later ones. */
  parallelismOf: Record<string, number>;
  /** Restarts counted against the budget (forgiven by a checkpoint long enough after the last). */
  restartsSpent: number;
  /** While RESTARTING: the loss being healed, when the drain began, and the backoff before the redeploy. */
  restarting?: { cause: string; since: number; backoffMs?: number; span?: Span; tries?: number };
  /** The job's failover regions (`<task>#<index>` lists), and each subtask's. */
  regions: string[][];
  regionOf: Map<string, number>;
  /** Retries spent by each subtask (`<task>#<index>`). */
  retriesBySubtask: Map<string, number>;
  /** Regions draining for a retry, by region. */
  retrying: Map<number, Omit<JobRetry, 'deployedAt' | 'attempt'> & { backoffMs: number; deploying?: boolean }>;
  retries: JobRetry[];
  /** The end-to-end guarantee it runs with, decided at submit (see connectors/capabilities.ts). */
  guarantee: JobGuarantee;
}

/** A job as submission builds it; its JobMaster gives it its checkpoint coordinator. */
export type NewJob = Omit<JobState, 'checkpointing'>;

/** A job as the API shows it. */
export interface JobView {
  jobId: string;
  name: string;
  state: JobStateName;
  startedAt: number;
  runningAt?: number;
  finishedAt?: number;
  durationMs: number;
  error?: string;
  parallelism: number;
  sourceRecords: number;
  sinkRecords: number;
  /** Channels that are pointer passes inside a worker (local) and that cross processes (socket). */
  edges: { local: number; socket: number };
  subtasks: { taskId: string; index: number; workerId: string; attempt: number; finished: boolean; error?: string }[];
  /** Each restart after a worker loss: when, why, and the checkpoint it resumed from. */
  restarts: JobRestart[];
  /** Each rescale (drain and replan): what changed, the checkpoint it restored from, and when it ran again. */
  rescales: JobRescale[];
  /** Its autoscaler, when it has one: the bounds and the decisions made (newest last). */
  autoscaler?: { min: number; max: number; decisions: AutoscaleRecord[] };
  /** Each retry of a failed subtask's failover region (jobs without checkpoints). */
  retries: JobRetry[];
  /** The delivery guarantee it runs with end to end, and the source or sink that limits it ('' when none does). */
  guarantee: JobGuarantee;
  /** Checkpoints (of every kind) it has completed, and the latest one's id (0: none yet). */
  checkpointsCompleted: number;
  lastCheckpointId: number;
  /** Every checkpoint up to `confirmedThrough` has had its commits confirmed; `owed` completed ones have not yet. */
  commits: { confirmedThrough: number; owed: number[] };
  /** The latest checkpoint aborted (absent: none has been). */
  lastCheckpointFailure?: CheckpointFailure;
}

export interface WorkerView {
  workerId: string;
  session: number;
  slotsTotal: number;
  slotsFree: number;
  dataHost: string;
  httpPort: number;
  runtime: string;
  /** The protocol it speaks (what it can be sent). */
  protocolVersion: number;
  registeredAt: number;
  lastSeenMsAgo: number;
  slotsUsed: number;
  /** The control connection's remote address. */
  address: string;
  /** `<jobId>/<task>#<index>` of every unfinished subtask placed on it. */
  subtasks: string[];
  /** How this worker's previous session ended (a verdict's cause), or null. */
  lastEnded: { session: number; state: 'lost' | 'retired'; cause: string; at: number } | null;
}

/** A job module the coordinator holds, by hash. */
export interface CachedModule {
  sha256: string;
  bytes: Uint8Array;
  sourceMap: Uint8Array;
}

/** The job takes a rescale's plan: its spec, plan, regions and parallelism settings from here on. */
export function takePlan(job: JobState, staged: Omit<StagedRescale, 'checkpointId'>): void {
  job.spec = staged.spec;
  job.plan = staged.plan;
  job.specJson = staged.specJson;
  job.buildParallelism = staged.buildParallelism;
  job.parallelismOf = staged.parallelismOf;
  job.regions = failoverRegions(staged.plan);
  job.regionOf = new Map(job.regions.flatMap((keys, i) => keys.map((k) => [k, i] as const)));
}
