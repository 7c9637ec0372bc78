/**
 * Checkpoint records on disk, under `<checkpoint dir>/_jobs/<job id>/`:
 * - `checkpoint-id`: the highest id claimed; an id is claimed here before it is used, so ids only rise.
 * - `chk-<id>/<task>#<index>.state`: each subtask's snapshot (written by the worker running it).
 * - `COMPLETED-<id>`: written (temp name, fsync, rename) once every subtask's state is durable; it
 *   records the subtask set, where the state lives, and each state file's size and SHA-256. A restore
 *   reads it and verifies every file against it before anything is loaded.
 * - `RESTORED`: written by a deploy that continues a run, naming what it restored and its first id.
 * - `COMMITTED`: every checkpoint up to the one it names has had its commits confirmed by the sinks that
 *   prepared something for it (commit-ledger.ts); rewritten as that moves.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ClinkError, StateError } from '../errors.js';
import { checkpointSettingsFindings, refuseOnErrors } from '../lint/index.js';
import type { MessageOf } from '../protocol/index.js';
import { checkpointIdOfStateDir, checkpointStateDir, jobStateDir, subtaskStateFile } from '../state/index.js';
import { subtaskKey } from '../plan/index.js';
import { fencedWrite } from '../ha/index.js';
import { writeFileDurably, makeDirectory } from '../util/index.js';
import type { CheckpointedJob, CheckpointStorage, PendingCheckpoint } from './checkpoint-ports.js';
import type { CommitRecord } from './commit-ledger.js';
import { identityOf, type CheckpointIdentity } from './restore-gate.js';

/** Refuse, at submit, a checkpoint configuration this engine cannot honour, saying what to change (the lint's settings checks). */
export function checkCheckpointConfig(c: MessageOf<'SubmitJob'>['checkpoint']): void {
  refuseOnErrors(checkpointSettingsFindings(c));
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
  /**
   * Each subtask's state file (`<task>#<index>.state` under stateDir): its size and the SHA-256 of its
   * body. Absent in markers written before files were verified.
   */
  files?: Record<string, { bytes: number; sha256: string }>;
  /** The job's name, graph hash and task chains (see restore-gate.ts). Absent in older markers. */
  identity?: CheckpointIdentity;
  /** Subtasks whose snapshot holds what a sink prepared, to be made visible when it completes. Absent: none, or an older marker. */
  committers?: string[];
}

/** The COMPLETED marker of checkpoint `p` of `job`, its state under `dir` for a savepoint, else the job's state directory. */
export function completedMarker(
  job: CheckpointedJob,
  p: PendingCheckpoint,
  dir: string,
  completedAtMs: number,
): CompletedMarker {
  return {
    checkpointId: p.id,
    jobId: job.id,
    jobName: job.name,
    subtasks: job.subtasks.map((t) => subtaskKey(t.taskId, t.index)),
    stateDir: checkpointStateDir(p.savepoint ? dir : jobStateDir(job.checkpoint, job.id), p.id),
    completedAtMs,
    stateBytes: p.bytes,
    files: p.files,
    identity: identityOf(job.plan, job.name),
    ...(p.committers.size > 0 ? { committers: [...p.committers].sort() } : {}),
  };
}

/** Bytes before a state file's body: "CLK2", the header length, the body's SHA-256 (see state/file.ts). */
const STATE_FILE_PREFIX_BYTES = 8 + 32;

export const jobDir = (checkpointDir: string, jobId: string): string => join(resolve(checkpointDir), '_jobs', jobId);

/** Write a small text file durably (see writeFileDurably). */
async function writeDurably(path: string, text: string): Promise<void> {
  await writeFileDurably(path, [Buffer.from(text)]);
}

/** Claim the next checkpoint id above `floor` and anything already recorded. */
export async function claimCheckpointId(dir: string, floor: number): Promise<number> {
  await makeDirectory(dir);
  const recorded = Number((await readFile(join(dir, 'checkpoint-id'), 'utf8').catch(() => '0')).trim()) || 0;
  const id = Math.max(recorded, floor) + 1;
  await writeDurably(join(dir, 'checkpoint-id'), `${id}\n`);
  return id;
}

export async function writeCompletedMarker(dir: string, marker: CompletedMarker): Promise<void> {
  await writeDurably(join(dir, `COMPLETED-${marker.checkpointId}`), JSON.stringify(marker, null, 2));
}

/**
 * Write one of a job's records (`RESTORED`, `COMMITTED`) in its marker directory. Under HA (`epoch` > 0)
 * it is fenced: a superseded coordinator cannot put its view over its successor's (FencedError).
 */
async function writeJobRecord(
  dir: string,
  name: 'RESTORED' | 'COMMITTED',
  record: object,
  epoch: number,
): Promise<void> {
  await makeDirectory(dir);
  if (epoch > 0) await fencedWrite(join(dir, name), epoch, record);
  else await writeDurably(join(dir, name), JSON.stringify(record, null, 2));
}

/** Write `RESTORED`: what a deploy that continues a run restored, and the first id it numbers. */
export function writeRestoredRecord(
  dir: string,
  record: { restoredFrom: string; checkpointId: number; firstId: number },
  epoch = 0,
): Promise<void> {
  return writeJobRecord(dir, 'RESTORED', record, epoch);
}

/** The job's `COMMITTED` record, or undefined when it has none (or it does not parse). */
export async function readCommitRecord(dir: string): Promise<CommitRecord | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, 'COMMITTED'), 'utf8')) as CommitRecord;
  } catch {
    return undefined;
  }
}

/** Checkpoint storage on a directory every node reads (the coordinator's and a mesh leader's). */
export function diskCheckpointStorage(epoch = 0): CheckpointStorage {
  return {
    claimId: claimCheckpointId,
    writeMarker: writeCompletedMarker,
    retain: retainCheckpoints,
    removeState: removeCheckpointState,
    recordCommits: (dir, record) => writeJobRecord(dir, 'COMMITTED', record, epoch),
  };
}

/**
 * Keep the newest `retained` completed checkpoints; delete older ones, marker first (a restore never
 * finds a marker whose state is gone), then their state under `stateDir`.
 */
export async function retainCheckpoints(dir: string, stateDir: string, retained: number): Promise<void> {
  const ids = completedIds(await readdir(dir)).sort((a, b) => b - a);
  for (const id of ids.slice(Math.max(1, retained))) {
    await rm(join(dir, `COMPLETED-${id}`), { force: true });
    await removeCheckpointState(stateDir, id);
  }
  // State of checkpoints that never completed (aborted, or a writer that outlived its abort) and
  // temp files of failed marker writes, older than the newest completed checkpoint: nothing reads them.
  const newest = ids[0] ?? 0;
  const kept = new Set(ids.slice(0, Math.max(1, retained)));
  for (const name of await readdir(stateDir).catch(() => [] as string[])) {
    const id = checkpointIdOfStateDir(name);
    if (id !== undefined && id < newest && !kept.has(id)) await removeCheckpointState(stateDir, id);
  }
  for (const name of await readdir(dir))
    if (/^COMPLETED-\d+\.\d+\.tmp$/.test(name)) await rm(join(dir, name), { force: true });
}

/** Remove one checkpoint's state directory (after an abort, or past retention). */
export async function removeCheckpointState(stateDir: string, checkpointId: number): Promise<void> {
  await rm(checkpointStateDir(stateDir, checkpointId), { recursive: true, force: true });
}

const completedIds = (names: string[]): number[] =>
  names
    .map((n) => /^COMPLETED-(\d+)$/.exec(n))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]));

/** Whether `dir` (a job's marker directory) holds any COMPLETED marker. */
export async function hasCompletedCheckpoint(dir: string): Promise<boolean> {
  return completedIds(await readdir(dir).catch(() => [] as string[])).length > 0;
}

/** A restore point, and the newer checkpoints passed over because a file of theirs failed verification. */
export interface RestorePoint {
  marker: CompletedMarker;
  /** The marker directory it was found in (a job's, under a checkpoint directory's `_jobs/`). */
  markerDir: string;
  skipped: { checkpointId: number; reason: string }[];
  /** The newest checkpoint whose commits the directory's COMMITTED record says were confirmed (0: none). */
  committedThrough: number;
}

/**
 * The marker to restore from, every state file of it verified. `dir` is a job's marker directory, or a
 * checkpoint directory holding one job's markers under `_jobs/`; `checkpointId` 0 means the newest
 * completed one whose files verify (older retained ones are fallbacks, listed in `skipped`); a named
 * one that does not verify is refused, naming the file.
 */
export async function resolveRestore(dir: string, checkpointId: number): Promise<RestorePoint> {
  let markerDir = resolve(dir);
  const names = await readdir(markerDir).catch(() => {
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore: cannot read ${markerDir}; --restore-from-dir must name a checkpoint or savepoint directory`,
    );
  });
  if (!names.some((n) => n.startsWith('COMPLETED-')) && names.includes('_jobs')) {
    const jobs = await readdir(join(markerDir, '_jobs'));
    if (jobs.length !== 1)
      throw new ClinkError(
        'CLINK_ERR_PLAN',
        `restore: ${markerDir} holds checkpoints of ${jobs.length} jobs; name one job's directory (${join(markerDir, '_jobs', '<job id>')})`,
      );
    markerDir = join(markerDir, '_jobs', jobs[0]!);
  }
  const ids = completedIds(await readdir(markerDir)).sort((a, b) => b - a);
  if (ids.length === 0) throw new ClinkError('CLINK_ERR_PLAN', `restore: no completed checkpoint in ${markerDir}`);
  if (checkpointId > 0 && !ids.includes(checkpointId)) {
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore: no COMPLETED-${checkpointId} in ${markerDir} (completed: ${[...ids].reverse().join(', ')})`,
    );
  }
  const skipped: RestorePoint['skipped'] = [];
  const committedThrough = (await readCommitRecord(markerDir))?.checkpointId ?? 0;
  for (const id of checkpointId > 0 ? [checkpointId] : ids) {
    const path = join(markerDir, `COMPLETED-${id}`);
    let marker: CompletedMarker;
    try {
      marker = JSON.parse(await readFile(path, 'utf8')) as CompletedMarker;
    } catch (err) {
      skipped.push({ checkpointId: id, reason: `${path} is unreadable: ${(err as Error).message}` });
      continue;
    }
    const bad = await verifyCheckpoint(marker);
    if (bad === undefined) return { marker, markerDir, skipped, committedThrough };
    skipped.push({ checkpointId: id, reason: bad });
  }
  const why = skipped.map((s) => `checkpoint ${s.checkpointId}: ${s.reason}`).join('; ');
  throw new UnusableCheckpointsError(
    checkpointId > 0
      ? `restore: checkpoint ${checkpointId} in ${markerDir} is unusable: ${why}`
      : `restore: no usable checkpoint in ${markerDir}: ${why}`,
    skipped,
    committedThrough,
  );
}

/** No checkpoint of a directory can be restored: each of them, and why. */
export class UnusableCheckpointsError extends StateError {
  constructor(
    message: string,
    readonly skipped: RestorePoint['skipped'],
    readonly committedThrough: number,
  ) {
    super(message);
  }
}

/** Why a completed checkpoint cannot be restored (a state file missing, of another size, or changed), or undefined. */
export async function verifyCheckpoint(marker: CompletedMarker): Promise<string | undefined> {
  for (const key of marker.subtasks) {
    const file = subtaskStateFile(marker.stateDir, key);
    const expected = marker.files?.[key];
    let size: number;
    try {
      size = (await stat(file)).size;
    } catch (err) {
      return `state file ${file} is missing (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
    if (!expected) continue; // a marker from before files were recorded: presence is all it can say
    if (size !== expected.bytes) return `state file ${file} holds ${size} bytes, the marker records ${expected.bytes}`;
    const actual = await bodyDigest(file);
    if (actual !== expected.sha256)
      return `state file ${file} is damaged: its SHA-256 is ${actual}, the marker records ${expected.sha256}`;
  }
  return undefined;
}

/** SHA-256 (hex) of a state file's body, read as a stream (the event loop keeps running). */
async function bodyDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { start: STATE_FILE_PREFIX_BYTES })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
