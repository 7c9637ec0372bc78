/**
 * The coordinator: admission, worker sessions, the watchdog, placement, deployment and job tracking.
 *
 * @example
 * const coordinator = await Coordinator.start({ port: 0 }, { log, metrics });
 * // ... workers register, clients submit ...
 * await coordinator.stop();
 */
export { Coordinator, type CoordinatorDeps } from './coordinator.js';
export { countChannels, toSummary } from './job-views.js';
export type { CheckpointFailure, JobView, JobRescale, JobRestart, JobRetry, WorkerView } from './job-state.js';
export type { AutoscaleRecord } from './autoscaler.js';
export type { JobDetail } from './job-book.js';
export type { JobGraphView, CheckpointSettingsView } from './job-graph.js';
export type { TaskMetrics } from './task-metrics.js';
export type { DepartedSession } from './worker-registry.js';
export { JOB_TRANSITIONS, IllegalTransitionError, isTerminal, transition, type JobStateName } from './job-lifecycle.js';
export {
  decideFailure,
  decideRedeployRetry,
  restartBackoffMs,
  restartsSinceCheckpoint,
  restartsSpentAfterCheckpoint,
  type Failure,
  type FailureContext,
  type FailureDecision,
} from './failure-handler.js';
export * from './config.js';
export {
  assignTaskPlacement,
  NotEnoughSlotsError,
  placementSubtasks,
  type PlacementPlan,
  type PlacementSubtask,
  type PlacementWorker,
} from './placement.js';
export {
  claimCheckpointId,
  diskCheckpointStorage,
  jobDir,
  readCommitRecord,
  removeCheckpointState,
  resolveRestore,
  verifyCheckpoint,
  retainCheckpoints,
  writeCompletedMarker,
  type CompletedMarker,
  type RestorePoint,
} from './checkpoint-storage.js';
export { CommitLedger, type CommitRecord } from './commit-ledger.js';
export { CheckpointCoordinator } from './checkpoint-coordinator.js';
export type {
  CheckpointedJob,
  CheckpointPort,
  CheckpointServices,
  CheckpointStorage,
  CompletedCheckpoint,
} from './checkpoint-ports.js';
export { deploymentTask, recordRestore } from './deployer.js';
export { checkRestore, identityOf, type CheckpointIdentity, type RestoreDecision } from './restore-gate.js';
export {
  addressKey,
  admissionVerdict,
  AdmissionLogLimiter,
  type PendingAdmission,
  type AdmissionVerdict,
} from './admission.js';
