/** Small shared utilities: a binary heap and a deferred. */
export { BinaryHeap } from './heap.js';
export { deferred, type Deferred } from './deferred.js';
export { abortable } from './abortable.js';
