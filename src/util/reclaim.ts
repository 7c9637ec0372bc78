/**
 * Give memory back after a large buffer is dropped: a full garbage collection, so the buffer (and the
 * socket reads copied into it) are freed now rather than whenever the heap next fills, which in an idle
 * process may be never. Used rarely (a peer cut for the frame budget, a large frame discarded); at most
 * once a second, after the current turn of the event loop.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const MIN_INTERVAL_MS = 1_000;
let collect: (() => void) | undefined;
let lastAt = -Infinity;
let scheduled = false;

function collector(): () => void {
  if (!collect) {
    // The collector a process gets with --expose-gc, obtained without it (it cannot be passed after start).
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  return collect;
}

export function reclaimMemory(): void {
  if (scheduled) return;
  scheduled = true;
  const wait = Math.max(0, lastAt + MIN_INTERVAL_MS - Date.now());
  setTimeout(() => {
    scheduled = false;
    lastAt = Date.now();
    collector()();
  }, wait).unref();
}
