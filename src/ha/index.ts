/**
 * High availability: leader election (a file lock or etcd), fenced metadata, and the job store a new
 * leader takes jobs over from.
 *
 * @example
 * const election = new FileElection({ dir: '/var/lib/clink/ha', host: '10.0.0.5', log });
 * election.onBecomeLeader(async (epoch) => { ... start the coordinator with this epoch ... });
 * await election.start();
 */
export { nodeName, type LeaderElection, type LeaderInfo } from './election.js';
export {
  FileElection,
  probeLocks,
  readLeader,
  leaderFile,
  DEFAULT_LOCK_POLL_MS,
  type FileElectionOptions,
} from './file-election.js';
export { EtcdElection, EtcdLeaderKeys, type EtcdElectionOptions } from './etcd-election.js';
export { fencedWrite, fencedRemove, readRecord, FencedError, type FencedWriteOptions } from './fenced-store.js';
export { withFileLock, tryLock, LockTimeoutError } from './file-lock.js';
export { LockHolder, lockGrantedToAnotherProcess } from './lock-holder.js';
export { HaJobStore, type JobManifest, type HistoryRecord } from './job-store.js';
export { leaderSource, type LeaderSource, type LeaderSourceOptions } from './leader-source.js';
