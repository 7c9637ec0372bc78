/**
 * OS file locks (flock, through fs-ext): the one primitive the file election and the fenced metadata
 * writes rest on. A lock belongs to the open file description and the kernel releases it when its holder
 * dies, so there is no stale lock to recover. Lock files are created once and never unlinked: unlinking
 * lets a later writer lock a fresh inode while an earlier one still holds the old.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { ClinkError } from '../errors.js';

type Flock = (fd: number, flags: 'ex' | 'exnb' | 'un', cb: (err: NodeJS.ErrnoException | null) => void) => void;

const require = createRequire(import.meta.url);
/** Where fs-ext is, for a helper process that takes a lock (see lock-holder.ts). */
export const FS_EXT_PATH = require.resolve('fs-ext');
/**
 * fs-ext, loaded when a lock is first taken, not when this module is imported: its addon is not
 * context-aware, and loading it on a thread of a process that had loaded it, after another thread
 * that had loaded it ended, crashed Node 20 with a V8 fatal error (a bench's local runs on threads).
 */
let flockFn: Flock | undefined;
const flock: Flock = (fd, flags, cb) => (flockFn ??= (require('fs-ext') as { flock: Flock }).flock)(fd, flags, cb);

/** Try to take an exclusive lock on `fd` without waiting: true when taken, false when another holds it. */
export function tryLock(fd: number): Promise<boolean> {
  return new Promise((resolve, reject) =>
    flock(fd, 'exnb', (err) => {
      if (!err) resolve(true);
      else if (err.code === 'EAGAIN' || err.code === 'EWOULDBLOCK') resolve(false);
      else reject(err);
    }),
  );
}

export class LockTimeoutError extends ClinkError {
  constructor(path: string, ms: number) {
    super('CLINK_ERR_STORAGE', `could not lock ${path} within ${ms} ms: another process holds it`);
  }
}

/**
 * Run `fn` holding an exclusive lock on `path` (created if missing, never unlinked). The lock is asked
 * for every `pollMs` rather than waited for in the thread pool, so a holder that never lets go costs a
 * timeout, not a thread.
 */
export async function withFileLock<T>(
  path: string,
  fn: () => Promise<T>,
  options: { timeoutMs?: number; pollMs?: number } = {},
): Promise<T> {
  const { timeoutMs = 10_000, pollMs = 5 } = options;
  const fh: FileHandle = await open(path, 'a');
  try {
    const deadline = Date.now() + timeoutMs;
    while (!(await tryLock(fh.fd))) {
      if (Date.now() >= deadline) throw new LockTimeoutError(path, timeoutMs);
      await new Promise((r) => setTimeout(r, pollMs));
    }
    return await fn();
  } finally {
    // Closing the description releases the lock.
    await fh.close();
  }
}
