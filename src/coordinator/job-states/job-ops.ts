/**
 * The job's own state code: JobMaster (job-master.ts) and one file per lifecycle state here. They are
 * the only writers of a JobState (the lint rule clink/job-state-writers holds them to it). Each state's
 * file says what entering it does, what happens while in it, and what leaving it resets; the master
 * dispatches frames and failures to them and is the one place a job's state changes (moveTo).
 *
 * This file declares what those state functions are given: the job's master as JobOps, and through it
 * the services every job shares, as typed ports.
 */
import type { Logger } from '../../log/index.js';
import type { ClinkMetrics, Tracer } from '../../metrics/index.js';
import type { Message, MessageOf } from '../../protocol/index.js';
import type { Clock } from '../../util/index.js';
import type { CheckpointServices } from '../checkpoint-ports.js';
import type { CompletedMarker } from '../checkpoint-storage.js';
import type { CoordinatorConfig } from '../config.js';
import type { Deployer } from '../deployer.js';
import type { JobStateName } from '../job-lifecycle.js';
import type { JobState, SubtaskState, WorkerSession } from '../job-state.js';
import type { RestoreStore } from '../restore-points.js';
import type { PlacementPlan } from '../placement.js';
import type { SlotWaiter } from '../slot-waiter.js';

/** What every job's master is built with: shared services and the coordinator's answers, no closures over it. */
export interface JobServices {
  config: CoordinatorConfig;
  clock: Clock;
  log: Logger;
  metrics: ClinkMetrics;
  tracer: Tracer;
  /** Checkpoint storage and the rest every job's checkpoint coordinator shares. */
  checkpoints: CheckpointServices;
  /** Slot waits and backoffs. */
  slots: SlotWaiter;
  deployer: Deployer;
  /** Where restarts find their restore point and record it. */
  restores: RestoreStore;
  /** Send a frame to a worker session. */
  post(s: WorkerSession, m: Message): void;
  /** The coordinator is shutting down: no restart begins. */
  stopping(): boolean;
  /** A slot came free or a job failed: placements waiting for slots look again. */
  capacityChanged(): void;
  /** The job has ended (every subtask finished, its state terminal); `completion` is what its client is told. */
  ended(job: JobState, completion: MessageOf<'JobCompleted'>): void;
}

/** What a state's code asks of the job's master. */
export interface JobOps {
  readonly job: JobState;
  readonly services: JobServices;
  /** Change the job's state, as the lifecycle table allows (throws on a move it does not list). */
  moveTo(to: JobStateName): void;
  /** Post `m` once to each live worker running an unfinished subtask of the job. */
  post(m: Message): void;
  /** Charge `placement`'s slots, record its subtasks as the job's (attempt `job.attempt`) and deploy them. */
  deploy(placement: PlacementPlan, restore: CompletedMarker | undefined): void;
  finishSubtask(st: SubtaskState, error: string | undefined): void;
  /** The job fails (or is cancelled). */
  fail(error: string, state?: 'FAILED' | 'CANCELED'): void;
  /** The job ends if every subtask has finished and nothing more is to come. */
  maybeComplete(): void;
}
