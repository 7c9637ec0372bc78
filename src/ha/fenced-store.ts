/**
 * Fenced metadata: a JSON record that carries the epoch of the coordinator that wrote it, and a write
 * that is refused when the record already holds a higher epoch. The check is a real compare-and-set:
 * reading the stored epoch, deciding, and the durable write (temp, fsync, rename) all happen under an
 * exclusive lock on `<path>.wlock`, so two writers cannot both pass the check; the second one reads
 * only after the first one's rename. A superseded coordinator therefore cannot write over its
 * successor's records.
 */
import { readFile, rm } from 'node:fs/promises';
import { ClinkError } from '../errors.js';
import { writeFileDurably } from '../util/index.js';
import { withFileLock } from './file-lock.js';

export class FencedError extends ClinkError {
  constructor(
    readonly path: string,
    readonly epoch: number,
    readonly storedEpoch: number,
  ) {
    super(
      'CLINK_ERR_FENCED',
      `refused to write ${path} at epoch ${epoch}: it holds epoch ${storedEpoch}, written by a newer leader (this coordinator has been superseded)`,
    );
  }
}

/** The epoch a record holds (0 when it does not exist or has none). */
async function storedEpoch(path: string): Promise<number> {
  try {
    const e = (JSON.parse(await readFile(path, 'utf8')) as { epoch?: unknown }).epoch;
    return typeof e === 'number' ? e : 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}

export interface FencedWriteOptions {
  /** Called inside the critical section, after the check and before the write (tests stretch the window with it). */
  inSection?: () => Promise<void>;
  lockTimeoutMs?: number;
}

/**
 * Write `record` (stamped with `epoch`) to `path` unless the record there holds a higher epoch; throws
 * FencedError then. An equal epoch is the same leader writing again.
 */
export async function fencedWrite(
  path: string,
  epoch: number,
  record: object,
  options: FencedWriteOptions = {},
): Promise<void> {
  await withFileLock(
    `${path}.wlock`,
    async () => {
      const stored = await storedEpoch(path);
      if (stored > epoch) throw new FencedError(path, epoch, stored);
      await options.inSection?.();
      await writeFileDurably(path, [Buffer.from(JSON.stringify({ ...record, epoch }, null, 2))]);
    },
    options.lockTimeoutMs === undefined ? {} : { timeoutMs: options.lockTimeoutMs },
  );
}

/** Read a fenced record, or undefined when there is none. */
export async function readRecord<T>(path: string): Promise<(T & { epoch: number }) | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T & { epoch: number };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Remove a fenced record unless it holds a higher epoch than `epoch` (throws FencedError then). */
export async function fencedRemove(path: string, epoch: number): Promise<void> {
  await withFileLock(`${path}.wlock`, async () => {
    const stored = await storedEpoch(path);
    if (stored > epoch) throw new FencedError(path, epoch, stored);
    await rm(path, { force: true });
  });
}
