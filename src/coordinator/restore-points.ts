/**
 * Where a job resumes: its newest usable checkpoint of its own, else the restore point it was submitted
 * with, else the beginning. A fallback past checkpoints whose commits its sinks may have made visible is
 * judged here (refused, or logged naming the sinks that write again).
 */
import { StorageError } from '../errors.js';
import type { Logger } from '../log/index.js';
import {
  hasCompletedCheckpoint,
  jobDir,
  resolveRestore,
  UnusableCheckpointsError,
  type CompletedMarker,
  type RestorePoint,
} from './checkpoint-storage.js';
import { recordRestore } from './deployer.js';
import { judgeFallback } from './fallback.js';
import type { JobState } from './job-state.js';

/** A job's checkpoints as a restart sees them. */
export interface RestoreStore {
  /** The newest usable checkpoint in a job's marker directory, or undefined when it has completed none (throws when every one is damaged). */
  newest(jobDir: string): Promise<RestorePoint | undefined>;
  /** Write `RESTORED` for a deploy that continues a run. */
  recordRestore(checkpointDir: string, jobId: string, restore: CompletedMarker, epoch: number): Promise<void>;
}

export const diskRestoreStore: RestoreStore = {
  newest: async (dir) => ((await hasCompletedCheckpoint(dir)) ? resolveRestore(dir, 0) : undefined),
  recordRestore,
};

/** What a restore of a job's own checkpoints reads of it. */
export type RestoringJob = Pick<JobState, 'id' | 'plan' | 'checkpoint'>;

/** How a log line names where a deploy resumes. */
export function describeRestorePoint(
  job: Pick<JobState, 'submittedRestore'>,
  restore: CompletedMarker | undefined,
): string {
  if (!restore) return 'the beginning (submitted without a restore point; no checkpoint had completed)';
  if (restore === job.submittedRestore)
    return `checkpoint ${restore.checkpointId} of ${restore.stateDir} (the restore point it was submitted with; none of its own had completed)`;
  return `checkpoint ${restore.checkpointId}`;
}

/**
 * A job's newest usable checkpoint of its own; undefined when it has none, or (`hasSubmittedRestore`)
 * when every one is damaged and the restore point it was submitted with is the next older one. A
 * fallback past checkpoints its transactional sinks may have committed throws, unless the job allows
 * duplicates on fallback; one that goes ahead is logged, naming the sinks that write again.
 */
export async function newestOwnRestore(
  store: RestoreStore,
  log: Logger,
  job: RestoringJob,
  hasSubmittedRestore: boolean,
): Promise<CompletedMarker | undefined> {
  const judge = (point: Pick<RestorePoint, 'skipped' | 'committedThrough'>, restored: number, to: string): void => {
    const line = judgeFallback({
      what: `job ${job.id}`,
      to,
      restored,
      point,
      plan: job.plan,
      allowed: job.checkpoint.allowDuplicatesOnFallback,
    });
    if (line) log.warn({ jobId: job.id, restoredFrom: restored }, line);
  };
  let point: RestorePoint | undefined;
  try {
    point = await store.newest(jobDir(job.checkpoint.checkpointDir, job.id));
  } catch (err) {
    if (!(err instanceof UnusableCheckpointsError) || !hasSubmittedRestore) throw err;
    judge(err, 0, 'the restore point it was submitted with');
    return undefined;
  }
  if (point) judge(point, point.marker.checkpointId, `checkpoint ${point.marker.checkpointId}`);
  return point?.marker;
}

/**
 * Where a restart or retry resumes: the job's newest completed checkpoint, else the restore point it
 * was submitted with, else (a job submitted fresh that never completed one) the beginning.
 */
export async function restorePoint(
  store: RestoreStore,
  log: Logger,
  job: RestoringJob & Pick<JobState, 'submittedRestore'>,
): Promise<CompletedMarker | undefined> {
  if (!job.checkpoint.checkpointDir) return job.submittedRestore;
  return (await newestOwnRestore(store, log, job, job.submittedRestore !== undefined)) ?? job.submittedRestore;
}

/** A failure of the storage (a full disk, an I/O error) rather than of what was asked of it: it may pass. */
export function isStorageFailure(err: unknown): boolean {
  if (err instanceof StorageError) return true;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return (
    code === 'ENOSPC' ||
    code === 'EDQUOT' ||
    code === 'EIO' ||
    code === 'EAGAIN' ||
    code === 'EBUSY' ||
    code === 'EMFILE' ||
    code === 'ENFILE'
  );
}
