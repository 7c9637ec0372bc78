/**
 * The local runtime: runs a job's physical plan in one process.
 *
 * @example
 * const result = await runJob(job, { parallelism: 2 });
 * console.log(result.collected.default);
 */
export {
  runJob,
  startJob,
  LocalExecution,
  DEFAULT_BATCH_SIZE,
  DEFAULT_QUEUE_CAPACITY_BATCHES,
  type LocalRunOptions,
  type JobResult,
  type TaskMetrics,
  type JobSnapshot,
} from './local.js';
export {
  NO_TIMESTAMP,
  MAX_WATERMARK,
  BATCH,
  WATERMARK,
  STATUS,
  END,
  BARRIER,
  type StreamElement,
  type RecordBatch,
  type BarrierElement,
} from './elements.js';
export { InputQueue } from './queue.js';
export { initialBatchLimit } from './debloat.js';
export { BarrierAligner, type AlignerEvent } from './aligner.js';
export { buildSubtask, channelTarget, type ChannelSink, type LocalInput, type SubtaskEnvironment } from './subtask.js';
export {
  SubtaskRunner,
  SubtaskPhase,
  PHASE_DESCRIPTIONS,
  type SubtaskPhaseCode,
  type SubtaskState,
  type SubtaskSnapshot,
  type SnapshotStats,
} from './subtask-runner.js';
export { WaitClock } from './wait-clock.js';
export { validateConnectors, type ConnectorRegistry } from './factory.js';
export {
  rescaleInputs,
  assignedSubtasks,
  overlappingSubtasks,
  type RescaledSnapshot,
  type RestoreSnapshot,
} from './rescale.js';
export { MAX_COLLECTED_BYTES } from './operators/collect.js';
export type { RuntimeServices } from './operator.js';
export { StreamOperator, type Output, type OperatorContext } from './operator.js';
export { CutoverGate, type CutoverAction } from './cutover-gate.js';
