/** Small shared utilities: a binary heap and a deferred. */
export { BinaryHeap } from './heap.js';
export { deferred, type Deferred } from './deferred.js';
export { abortable } from './abortable.js';
export { writeFileDurably, syncDirectory, nodeFs, type DurableFs, type DurableHandle } from './durable.js';
export { makeDirectory } from './directory.js';
export { AUTH_TOKEN_ENV, authTokenFromEnv, tokensEqual } from './secret.js';
export {
  MAX_TIMER_DELAY_MS,
  isNeverDelay,
  setTimer,
  setRepeating,
  setTimerUntil,
  systemClock,
  type Clock,
} from './timers.js';
export { describeIssues, formatPath } from './validation.js';
export { booleanText, bounds, flinkDuration, keyValue, oneOf, wholeNumber, type ValueParser } from './parse.js';
export { startThread } from './threads.js';
export { recordsCodec } from './records-codec.js';
export { isInt32, sameNumber } from './numbers.js';
export { RecentIds } from './recent.js';
export { reclaimMemory } from './reclaim.js';
export { withDefaults } from './defaults.js';
export { WriteChain } from './write-chain.js';
export { Waiters } from './waiters.js';
