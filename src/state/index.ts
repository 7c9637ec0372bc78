/**
 * Keyed state partitioned by key group: in heap tables, or on disk (LMDB) behind a cache.
 *
 * @example
 * const backend = new KeyedStateBackend(KeyGroupRange.forSubtask(0, 1), 'counter');
 * backend.setCurrentKey('user-1');
 * backend.value<number>('count').update(1);
 */
export { KeyedStateBackend, SNAPSHOT_SLICE_MS, type BackendSnapshot, type DiskStateOptions } from './backend.js';
export { localStateRoot, removeThreadStateDir, sweepDeadStateDirs } from './disk-storage.js';
export { StateTable, type EncodedGroup } from './table.js';
export {
  jobStateDir,
  stateBackendDir,
  checkpointStateDir,
  checkpointIdOfStateDir,
  removeAbortedState,
  subtaskStateFile,
} from './location.js';
export {
  decodeStateFile,
  decodeStateFileSliced,
  encodeStateFile,
  writeStateFile,
  type WrittenStateFile,
} from './file.js';
export { isNumberTableKey, NumberGroup, NumberTable } from './number-table.js';
export { decodeNumberGroup, statePackr } from './group-codec.js';
