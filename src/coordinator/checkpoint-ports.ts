/**
 * What a job's checkpoint coordinator reads of its job, asks of it, and shares with every other job's:
 * the ports it is built with, and the records it keeps (the checkpoint in flight, the completed ones).
 */
import type { Logger } from '../log/index.js';
import type { Clock } from '../util/index.js';
import type { CheckpointFailureReason, ClinkMetrics, Span, Tracer } from '../metrics/index.js';
import type { PhysicalPlan } from '../plan/index.js';
import type { Message, MessageOf } from '../protocol/index.js';
import type { CompletedMarker } from './checkpoint-storage.js';
import type { CommitRecord } from './commit-ledger.js';
import type { JobStateName } from './job-lifecycle.js';

/** A checkpoint given up: its id, the typed reason (counted by clink_checkpoints_aborted_total), and what happened. */
export interface CheckpointFailure {
  checkpointId: number;
  reason: CheckpointFailureReason;
  detail: string;
  at: number;
}

export type SavepointResult = { ok: boolean; message: string; path: string };

/** The checkpoint in flight: what it waits for and what the acks so far brought. */
export interface PendingCheckpoint {
  id: number;
  pending: Set<string>;
  startedAt: number;
  bytes: number;
  /** Each acked subtask's state file: size and SHA-256, recorded in the marker. */
  files: Record<string, { bytes: number; sha256: string }>;
  /** Subtasks whose snapshot holds what a sink prepared: each confirms the commit (CommitLedger). */
  committers: Set<string>;
  /** The longest barrier alignment any subtask reported. */
  alignmentMs: number;
  /** Its barriers overtake the records ahead of them (which are written with it). */
  unaligned: boolean;
  /** Each acked subtask: when its ack came (ms after the trigger) and what it reported. */
  acks: Record<string, SubtaskCheckpointStats>;
  /** For a savepoint: where it goes, and who waits for it. */
  savepoint?: { dir: string; done: (r: SavepointResult) => void };
  /** A checkpoint of the job's own asked for (a rescale's): who waits for it. */
  requested?: (r: { ok: boolean; message: string }) => void;
  final?: boolean;
  /** A periodic checkpoint begun once every source had ended (its barriers are the last records' followers). */
  afterSourcesEnded?: boolean;
  /** Its clink.checkpoint span (OTLP), ended with the checkpoint. */
  span?: Span;
}

/** One subtask's part in a checkpoint, as its ack reported it. */
export interface SubtaskCheckpointStats {
  /** From the trigger to its ack (the coordinator's clock). */
  ackMs: number;
  /** From its worker receiving the trigger to the subtask taking its first barrier. */
  startDelayMs: number;
  alignmentMs: number;
  stateBytes: number;
  /** In-flight records written with it (unaligned). */
  inflightBytes: number;
  unaligned: boolean;
}

/** A completed checkpoint as the API lists it. */
export interface CompletedCheckpoint {
  checkpointId: number;
  kind: 'periodic' | 'savepoint' | 'final';
  /** Whether its barriers overtook the records ahead of them: unaligned if any subtask's did. */
  alignment: 'aligned' | 'unaligned';
  durationMs: number;
  stateBytes: number;
  alignmentMs: number;
  /** The longest start delay of any subtask. */
  startDelayMs: number;
  /** In-flight records written with it, over every subtask. */
  inflightBytes: number;
  completedAtMs: number;
  /** Each subtask's part, by `<task>#<index>`. */
  subtasks: Record<string, SubtaskCheckpointStats>;
}

/**
 * What checkpointing reads of its job (never writes): a coordinator's JobState, or a mesh run's
 * leader's record of its one job (mesh/leader.ts).
 */
export interface CheckpointedJob {
  readonly id: string;
  readonly name: string;
  readonly plan: PhysicalPlan;
  readonly state: JobStateName;
  readonly checkpoint: MessageOf<'SubmitJob'>['checkpoint'];
  /** A hot rescale under way: periodic checkpoints and savepoints wait. */
  readonly cutover?: unknown;
  readonly subtasks: readonly { readonly taskId: string; readonly index: number; readonly finished: boolean }[];
}

/** Checkpoint storage: ids claimed on a record, markers, retention, removal of aborted state, confirmed commits. */
export interface CheckpointStorage {
  claimId(dir: string, floor: number): Promise<number>;
  writeMarker(dir: string, marker: CompletedMarker): Promise<void>;
  retain(markerDir: string, stateDir: string, retained: number): Promise<void>;
  removeState(stateDir: string, checkpointId: number): Promise<void>;
  /** Write the job's COMMITTED record: which checkpoints' commits its sinks have confirmed. */
  recordCommits(dir: string, record: CommitRecord): Promise<void>;
}

/** What a job's checkpoint coordinator asks of its job. */
export interface CheckpointPort {
  /** Send `m` to every live worker running an unfinished subtask of the job. */
  post(m: Message): void;
  /**
   * Checkpointing cannot go on (`reason`): the final checkpoint failed (the job's tail cannot be
   * committed without one), or more periodic checkpoints failed in a row than the job tolerates. The job
   * heals as from any failure (a restart from its last checkpoint writes what came after it again, once),
   * or fails when it cannot or the failure is `fatal` (state that cannot be encoded: a restart would repeat it).
   */
  failed(reason: string, fatal: boolean): void;
  /** The job may be complete now (a checkpoint it waited for ended). */
  maybeComplete(): void;
  /** A savepoint with --cancel completed: the job is cancelled. */
  cancel(reason: string): void;
  /** A checkpoint completed at `completedAtMs` (the job may forgive restarts spent). */
  completed?(completedAtMs: number): void;
  /** Every worker of the job takes ConvertCheckpoint (else adaptive alignment takes a checkpoint again unaligned). */
  convertsInPlace(): boolean;
}

/** The services every job's checkpoint coordinator shares. */
export interface CheckpointServices {
  clock: Clock;
  storage: CheckpointStorage;
  log: Logger;
  metrics: ClinkMetrics;
  /** clink.checkpoint spans, trigger to completion. @default NO_TRACING */
  tracer?: Tracer;
}
