/**
 * The job SDK: what a job module imports from 'clink'.
 *
 * @example
 * import { defineJob, Windows } from 'clink';
 * export default defineJob({ name: 'clicks', version: '1' }, (env) => {
 *   env.fromSource('datagen', { count: 1000, seed: 1, fields: { user: { kind: 'int', min: 1, max: 9 }, ts: { kind: 'sequence' } } })
 *     .assignTimestamps((r) => r.ts)
 *     .keyBy((r) => r.user)
 *     .window(Windows.tumbling(100))
 *     .count()
 *     .print();
 * });
 */
export {
  defineJob,
  isJobDefinition,
  buildJob,
  type JobDefinition,
  type JobInfo,
  type BuildFunction,
  type BuiltJob,
  type BuildOptions,
} from './define-job.js';
export { JobEnvironment } from './env.js';
export {
  DataStream,
  DataSink,
  KeyedStream,
  WindowedStream,
  WindowResultStream,
  ConnectedStreams,
  KeyedConnectedStreams,
  IntervalJoinBuilder,
  JoinBuilder,
} from './stream.js';
export { Windows, type WindowAssigner } from './windows.js';
export {
  Schema,
  States,
  type KeyedProcessOptions,
  type StateDeclaration,
  type StateMigration,
  type StateSchema,
} from './state-declarations.js';
export type { OperatorFunctions } from './graph.js';
export { defineConnector } from './connector.js';
export { connectorOptions, installNamedConnectors, namedConnector } from './named-connectors.js';
export type {
  Connector,
  SourceFactory,
  SinkFactory,
  SourceReader,
  SourceOutput,
  SourceContext,
  SinkWriter,
  SinkContext,
  RecoverScope,
  ReadStatus,
  ConnectorCheckContext,
} from './connector.js';
export type * from './types.js';
