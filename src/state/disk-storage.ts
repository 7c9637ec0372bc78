/**
 * Where the disk backend keeps a subtask's keyed state: one LMDB environment per backend (design record
 * 024), in its own directory under the worker's local state directory, and one database in it per
 * state. The local copy is a working copy, never the durable one (checkpoints are), so it is written
 * without fsync and removed on close. Stores live under `p<pid>/t<threadId>` of the root: a job thread
 * terminated before its stores closed has its directory removed by the worker that ran it
 * (removeThreadStateDir), and a process killed before it closed its stores leaves `p<pid>` behind, which
 * the next store opened under the same root, or the next worker started with it, removes.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { threadId } from 'node:worker_threads';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type * as Lmdb from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import { StateError } from '../errors.js';

/** The local state directory when none is set (Flink's io.tmp.dirs is the system's temp dir too). */
const DEFAULT_LOCAL_STATE_DIR = join(tmpdir(), 'clink-state');

/** The directory a worker's `--local-state-dir` setting names: empty means the default. */
export const localStateRoot = (setting: string | undefined): string => setting || DEFAULT_LOCAL_STATE_DIR;
/** States of one operator subtask on the disk backend, at most (LMDB's named databases). */
const MAX_STATES = 256;

const PROCESS_DIR = /^p(\d+)$/;
/** The LMDB binding, loaded with the first store: a process that keeps no state on disk never loads it. */
let lmdb: typeof Lmdb | undefined;
const loadLmdb = (): typeof Lmdb => (lmdb ??= createRequire(import.meta.url)('lmdb') as typeof Lmdb);

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Remove what dead processes left under `root`: each time a store opens (a restart after a worker was
 * killed opens new ones, on the workers that are left) and when a worker starts.
 */
export function sweepDeadStateDirs(root: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(PROCESS_DIR.exec(name)?.[1] ?? NaN);
    if (Number.isInteger(pid) && pid !== process.pid && !alive(pid))
      rmSync(join(root, name), { recursive: true, force: true });
  }
}

/** The directory of the stores job thread `thread` of this process opens under `root`. */
export const threadStateDir = (root: string, thread: number): string => join(root, `p${process.pid}`, `t${thread}`);

/** Remove what a job thread that ended left of its stores (it could not close them: it was terminated). */
export function removeThreadStateDir(root: string, thread: number): void {
  rmSync(threadStateDir(localStateRoot(root), thread), { recursive: true, force: true });
}

export class DiskStorage {
  readonly dir: string;
  private readonly env: RootDatabase;
  private closed = false;

  /** A new environment for one backend; `tag` names its directory (the operator and subtask). */
  constructor(root: string, tag: string) {
    sweepDeadStateDirs(root);
    const base = threadStateDir(root, threadId);
    try {
      mkdirSync(base, { recursive: true });
      this.dir = mkdtempSync(join(base, `${tag.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64)}-`));
      this.env = loadLmdb().open({ path: this.dir, maxDbs: MAX_STATES, noSync: true, noMetaSync: true, cache: false });
    } catch (err) {
      throw new StateError(
        `the disk state backend cannot open its store under ${root}: ${(err as Error).message}; give a writable directory with --local-state-dir`,
        { cause: err },
      );
    }
  }

  /** The database of one state, keys and values as bytes. */
  database(name: string): Database<Buffer, Buffer> {
    return this.env.openDB<Buffer, Buffer>(name, { keyEncoding: 'binary', encoding: 'binary' });
  }

  /** Run `fn` in one write transaction (every put and remove in it commits together). */
  write(fn: () => void): void {
    this.env.transactionSync(fn);
  }

  /** Close the environment and remove its directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.env.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
