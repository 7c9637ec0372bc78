/**
 * The worker: registers with a coordinator, heartbeats, and runs deployed subtasks.
 *
 * @example
 * const worker = await Worker.start({ id: 'w1', coordinatorHost: '127.0.0.1', coordinatorPort: 6123, slots: 2,
 *   dataHost: '127.0.0.1', heartbeatIntervalMs: 500, peerUpdateTimeoutMs: 30_000 }, { log, metrics });
 */
export {
  Worker,
  RegistrationRefusedError,
  DEFAULT_WORKER_CONFIG,
  type WorkerSettings,
  type TaskIsolation,
  type WorkerConfig,
  type WorkerDeps,
  type WorkerEnd,
} from './worker.js';
export { MAX_COLLECTED_BYTES } from '../runtime/index.js';
export { JobHost, type JobHostConfig, type JobHostDeps } from './job-host.js';
export {
  WorkerSupervisor,
  DEFAULT_RECONNECT_POLICY,
  reconnectDelayMs,
  type ReconnectPolicy,
  type SupervisorEnd,
  type LeaderDiscovery,
  type WorkerStatus,
} from './supervisor.js';
