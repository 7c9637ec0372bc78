/**
 * Durable file writes: a temp name, every byte written (a short write is continued, never taken for
 * success), fsync, a size check, rename, and an fsync of the directory so the rename survives a crash.
 * A failure removes the temp file and says how far it got.
 */
import * as fsp from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { StorageError } from '../errors.js';

/** The few file-system calls a durable write makes; tests inject one that writes short or fails. */
export interface DurableFs {
  open(path: string, flags: string): Promise<DurableHandle>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string): Promise<void>;
}

export interface DurableHandle {
  writev(buffers: Uint8Array[]): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  stat(): Promise<{ size: number }>;
  close(): Promise<void>;
}

export const nodeFs: DurableFs = {
  open: (path, flags) => fsp.open(path, flags),
  rename: (from, to) => fsp.rename(from, to),
  rm: (path) => fsp.rm(path, { force: true }),
};

/** writev takes at most IOV_MAX (1024) buffers at a time. */
const IOV_MAX = 1024;

/** Write every byte of `chunks` to `fh`, continuing after short writes; `progress` counts what went. */
async function writeAll(
  fh: DurableHandle,
  chunks: readonly Uint8Array[],
  total: number,
  progress: { written: number },
): Promise<void> {
  let pending = chunks.filter((c) => c.length > 0);
  while (pending.length > 0) {
    const { bytesWritten } = await fh.writev(pending.slice(0, IOV_MAX));
    if (bytesWritten <= 0) throw new Error(`the file system took 0 of ${total - progress.written} bytes left`);
    progress.written += bytesWritten;
    // Drop what was written: whole chunks, then the written part of the next.
    let n = bytesWritten;
    let i = 0;
    while (i < pending.length && n >= pending[i]!.length) n -= pending[i++]!.length;
    pending = pending.slice(i);
    if (n > 0) pending[0] = pending[0]!.subarray(n);
  }
}

/**
 * Write `chunks` to `path` durably; returns the bytes written. Only a complete, fsynced file of the
 * expected size ever takes the final name; nothing is left under the temp name on failure.
 */
export async function writeFileDurably(
  path: string,
  chunks: readonly Uint8Array[],
  fs: DurableFs = nodeFs,
): Promise<number> {
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const tmp = `${path}.${process.pid}.tmp`;
  const progress = { written: 0 };
  try {
    const fh = await fs.open(tmp, 'w');
    try {
      await writeAll(fh, chunks, total, progress);
      await fh.sync();
      const { size } = await fh.stat();
      if (size !== total) throw new Error(`the file holds ${size} bytes after fsync, not ${total}`);
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.rm(tmp).catch(() => undefined);
    const why = (err as Error)?.message ?? String(err);
    throw new StorageError(
      `could not write ${basename(path)} durably in ${dirname(path)} (${progress.written} of ${total} bytes written): ${why}`,
      path,
      progress.written,
      total,
      { cause: err },
    );
  }
  await syncDirectory(dirname(path));
  return total;
}

/** fsync a directory, so a rename or a new file in it survives a crash (a no-op where unsupported). */
export async function syncDirectory(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch {
    // Some file systems (and platforms) refuse fsync on a directory; the rename itself has happened.
  } finally {
    await fh?.close().catch(() => undefined);
  }
}
