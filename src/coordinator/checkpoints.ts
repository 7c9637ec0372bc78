/**
 * Checkpoint records on disk, under `<checkpoint dir>/_jobs/<job id>/`:
 * - `checkpoint-id`: the highest id claimed; an id is claimed here before it is used, so ids only rise.
 * - `chk-<id>/<task>#<index>.state`: each subtask's snapshot (written by the worker running it).
 * - `COMPLETED-<id>`: written (temp name, fsync, rename) once every subtask's state is durable; it
 *   records the subtask set and where the state lives. A restore reads it.
 * - `RESTORED`: written by a deploy that continues a run, naming what it restored and its first id.
 */
import { open, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ClinkError, InvalidArgumentError } from '../errors.js';
import type { MessageOf } from '../protocol/index.js';
import { stateBackendDir } from '../state/index.js';

/** Refuse, at submit, a checkpoint configuration this engine cannot honour, saying what to change. */
export function checkCheckpointConfig(c: MessageOf<'SubmitJob'>['checkpoint']): void {
  if (c.alignment !== 'aligned') {
    throw new InvalidArgumentError(`--alignment ${c.alignment}: only aligned checkpoints are supported so far; submit with --alignment aligned`);
  }
  if (c.checkpointsRetained < 1) throw new InvalidArgumentError(`--checkpoints-retained ${c.checkpointsRetained}: keep at least 1 checkpoint`);
  if (c.stateBackendUri) {
    if (!c.checkpointDir) throw new InvalidArgumentError(`--state-backend ${c.stateBackendUri} needs --checkpoint-dir too (the COMPLETED markers go there)`);
    try {
      stateBackendDir(c.stateBackendUri);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  }
  if (c.intervalMs > 0 && !c.checkpointDir) throw new InvalidArgumentError(`--checkpoint-interval-ms ${c.intervalMs} needs --checkpoint-dir (where checkpoints go)`);
}

export interface CompletedMarker {
  checkpointId: number;
  jobId: string;
  jobName: string;
  /** `<task id>#<subtask index>` of every subtask whose state the checkpoint holds. */
  subtasks: string[];
  stateDir: string;
  completedAtMs: number;
  stateBytes: number;
}

export const jobDir = (checkpointDir: string, jobId: string): string => join(resolve(checkpointDir), '_jobs', jobId);

/** Write a file durably: a temp name, fsync, rename. */
async function writeDurably(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}

/** Claim the next checkpoint id above `floor` and anything already recorded. */
export async function claimCheckpointId(dir: string, floor: number): Promise<number> {
  await mkdir(dir, { recursive: true });
  const recorded = Number((await readFile(join(dir, 'checkpoint-id'), 'utf8').catch(() => '0')).trim()) || 0;
  const id = Math.max(recorded, floor) + 1;
  await writeDurably(join(dir, 'checkpoint-id'), `${id}\n`);
  return id;
}

export async function writeCompletedMarker(dir: string, marker: CompletedMarker): Promise<void> {
  await writeDurably(join(dir, `COMPLETED-${marker.checkpointId}`), JSON.stringify(marker, null, 2));
}

export async function writeRestoredRecord(dir: string, record: { restoredFrom: string; checkpointId: number; firstId: number }): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeDurably(join(dir, 'RESTORED'), JSON.stringify(record, null, 2));
}

/**
 * Keep the newest `retained` completed checkpoints; delete older ones, marker first (a restore never
 * finds a marker whose state is gone), then their state under `stateDir`.
 */
export async function retainCheckpoints(dir: string, stateDir: string, retained: number): Promise<void> {
  const ids = (await readdir(dir)).map((n) => /^COMPLETED-(\d+)$/.exec(n)).filter((m) => m !== null).map((m) => Number(m[1])).sort((a, b) => b - a);
  for (const id of ids.slice(Math.max(1, retained))) {
    await rm(join(dir, `COMPLETED-${id}`), { force: true });
    await rm(join(stateDir, `chk-${id}`), { recursive: true, force: true });
  }
}

/**
 * The marker to restore from. `dir` is a job's marker directory, or a checkpoint directory holding one
 * job's markers under `_jobs/`; `checkpointId` 0 means the newest completed one.
 */
export async function resolveRestore(dir: string, checkpointId: number): Promise<CompletedMarker> {
  let markerDir = resolve(dir);
  const names = await readdir(markerDir).catch(() => {
    throw new ClinkError('CLINK_ERR_PLAN', `restore: cannot read ${markerDir}; --restore-from-dir must name a checkpoint or savepoint directory`);
  });
  if (!names.some((n) => n.startsWith('COMPLETED-')) && names.includes('_jobs')) {
    const jobs = await readdir(join(markerDir, '_jobs'));
    if (jobs.length !== 1) throw new ClinkError('CLINK_ERR_PLAN', `restore: ${markerDir} holds checkpoints of ${jobs.length} jobs; name one job's directory (${join(markerDir, '_jobs', '<job id>')})`);
    markerDir = join(markerDir, '_jobs', jobs[0]!);
  }
  const ids = (await readdir(markerDir)).map((n) => /^COMPLETED-(\d+)$/.exec(n)).filter((m) => m !== null).map((m) => Number(m[1]));
  if (ids.length === 0) throw new ClinkError('CLINK_ERR_PLAN', `restore: no completed checkpoint in ${markerDir}`);
  const id = checkpointId > 0 ? checkpointId : Math.max(...ids);
  if (!ids.includes(id)) throw new ClinkError('CLINK_ERR_PLAN', `restore: no COMPLETED-${id} in ${markerDir} (completed: ${ids.sort((a, b) => a - b).join(', ')})`);
  return JSON.parse(await readFile(join(markerDir, `COMPLETED-${id}`), 'utf8')) as CompletedMarker;
}
