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
} from './local.js';
export { NO_TIMESTAMP, MAX_WATERMARK } from './elements.js';
export { InputQueue } from './queue.js';
export { StreamOperator, type Output, type OperatorContext } from './operator.js';
