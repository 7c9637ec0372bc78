/**
 * Where a job's checkpoint state lives on disk, spelled once:
 *   <state root>/_jobs/<job>/chk-<id>/<task>#<index>.state
 * (the markers, `COMPLETED-<id>` and `RESTORED`, are the coordinator's: coordinator/checkpoint-storage.ts).
 */
import { rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StateError } from '../errors.js';

/**
 * The directory a state backend URI names: a path, or a `file://` URI. Other schemes are refused,
 * naming what is supported (the coordinator checks this at submit, before anything runs).
 */
export function stateBackendDir(uri: string): string {
  if (uri.startsWith('file:')) {
    try {
      return fileURLToPath(uri);
    } catch (err) {
      throw new StateError(`--state-backend ${uri} is not a valid file:// URI: ${(err as Error).message}`);
    }
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(uri);
  if (scheme)
    throw new StateError(
      `--state-backend ${uri}: the '${scheme[1]}' scheme is not supported; give a directory path or a file:// URI`,
    );
  return resolve(uri);
}

/**
 * `<state root>/_jobs/<job>`: the root is the state backend when one is given, else the checkpoint
 * directory. Each checkpoint's state goes in `chk-<id>/` below it.
 */
export function jobStateDir(c: { checkpointDir: string; stateBackendUri: string }, jobId: string): string {
  return join(c.stateBackendUri ? stateBackendDir(c.stateBackendUri) : resolve(c.checkpointDir), '_jobs', jobId);
}

/** The directory of one checkpoint's state under a job's state directory (or a savepoint's). */
export function checkpointStateDir(jobStateRoot: string, checkpointId: number): string {
  return join(jobStateRoot, `chk-${checkpointId}`);
}

/** The checkpoint id a `chk-<id>` directory name holds, or undefined. */
export function checkpointIdOfStateDir(name: string): number | undefined {
  const m = /^chk-(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** One subtask's state file in a checkpoint's state directory, by its key (`subtaskKey(task, index)`). */
export function subtaskStateFile(checkpointDir: string, key: string): string {
  return join(checkpointDir, `${key}.state`);
}

/**
 * After its checkpoint was aborted: remove a state file written for it (if given), then its checkpoint's
 * directory if nothing else is left in it (another subtask's write may still be under way).
 */
export async function removeAbortedState(checkpointDir: string, file?: string): Promise<void> {
  if (file) await rm(file, { force: true });
  await rmdir(checkpointDir).catch(() => undefined);
}
