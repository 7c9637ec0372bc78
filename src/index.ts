/**
 * clink: the package door. Job modules import the SDK from here; tools import `runJob` to run a job
 * in this process.
 *
 * @example
 * import { defineJob, Windows } from 'clink';
 */
export * from './sdk/index.js';
export { runJob, startJob, type JobResult, type LocalRunOptions, type TaskMetrics, type JobSnapshot } from './runtime/index.js';
export { datagen, file, datagenRow, kafka, nats, postgres, ownerOf, nexmark, nexmarkGenerator, type Auction, type Bid, type KafkaRecord, type NatsRecord, type NexmarkEvent, type Person } from './connectors/index.js';
export {
  ClinkError,
  ERROR_CODES,
  UserCodeError,
  PlanError,
  InvalidArgumentError,
  JobLoadError,
  JobDefinitionError,
  ConnectorError,
  StateError,
  JobCancelledError,
  type ErrorCode,
} from './errors.js';
export { MAX_PARALLELISM, KeyGroupRange, type JobGraphSpec } from './plan/index.js';
