/**
 * clink: the package door. Job modules import the SDK from here; tools import `runJob` to run a job
 * in this process.
 *
 * @example
 * import { defineJob, Windows } from 'clink';
 */
export * from './sdk/index.js';
import type { JobDefinition, JobInfo } from './sdk/index.js';
export {
  runJob,
  startJob,
  type JobResult,
  type LocalRunOptions,
  type TaskMetrics,
  type JobSnapshot,
} from './runtime/index.js';
export {
  datagen,
  file,
  datagenRow,
  kafka,
  nats,
  postgres,
  ownerOf,
  nexmark,
  nexmarkGenerator,
  type Auction,
  type Bid,
  type KafkaRecord,
  type NatsRecord,
  type NexmarkEvent,
  type Person,
} from './connectors/index.js';
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

/**
 * A SQL job (what `clink sql` ships as a job module): CREATE statements and one INSERT INTO, SELECT or
 * EXECUTE STATEMENT SET, planned when the module loads. The SQL planner loads only here, so a job
 * that does not use SQL never pays for it.
 *
 * @example
 * export default await sqlJob({ name: 'q', version: '1' }, "CREATE TABLE t (...) WITH (...); SELECT ...");
 */
export async function sqlJob(info: JobInfo, script: string): Promise<JobDefinition> {
  const { sqlJobDefinition } = await import('./sql/index.js');
  return sqlJobDefinition(info, script);
}
