/**
 * HA jobs: what a leader persists and what its successor takes over (the job store is ha/job-store.ts).
 *
 * Each submitted job is persisted once deployed (a job that cannot be is cancelled: it could not be
 * taken over); each ended job's record goes to the history and its manifest goes. A newly elected
 * leader reloads the history, lets worker registrations settle (the reconnecting workers arrive within
 * moments of each other, and a redeploy at the first one would put every subtask on it), then submits
 * each persisted job again under its id, from its newest completed checkpoint (else the restore point it
 * was submitted with, else the beginning: the rule a restart follows); each manifest was claimed (written
 * again at its epoch) before the wait. A job that fails only for slots is parked and tried again whenever a worker registers;
 * any other failure drops it, loudly.
 */
import { ClinkError } from '../errors.js';
import type { HaJobStore, HistoryRecord, JobManifest } from '../ha/index.js';
import type { Logger } from '../log/index.js';
import { NO_TRACING, type ClinkMetrics, type Tracer } from '../metrics/index.js';
import type { MessageOf } from '../protocol/index.js';
import type { CompletedMarker } from './checkpoint-storage.js';
import { describeRestorePoint } from './restore-points.js';
import type { CachedModule, JobState, JobView } from './job-state.js';
import type { PlacedJob, Resubmission } from './job-submission.js';
import { NotEnoughSlotsError } from './placement.js';

/** Registrations must have been quiet this long before jobs are placed... */
export const RECOVERY_WORKER_SETTLE_MS = 1_000;
/** ...but the takeover waits at most this long for that. */
export const RECOVERY_WORKER_SETTLE_DEADLINE_MS = 5_000;

/** What a job's submit asked for, as far as a successor needs it. */
export type SubmittedAs = Pick<
  MessageOf<'SubmitJob'>,
  'specJson' | 'params' | 'buildParallelism' | 'checkpoint' | 'autoscaleMin' | 'autoscaleMax'
>;

export interface HaJobsDeps {
  store: HaJobStore;
  epoch: number;
  log: Logger;
  metrics: ClinkMetrics;
  /** The clink.takeover span, claims to the last job deployed, parked or dropped. @default NO_TRACING */
  tracer?: Tracer;
  /** Resolves once registrations have been quiet for `stableMs`, or after `maxMs`. */
  settle: (stableMs: number, maxMs: number) => Promise<void>;
  running: (jobId: string) => boolean;
  /** The job's newest completed checkpoint of its own (undefined when none; throws when every one is damaged). */
  /**
   * A job's newest usable checkpoint of its own (undefined: none, or every one is damaged and it has a
   * restore point it was submitted with); throws when it cannot be restored (a refused fallback).
   */
  ownRestore: (manifest: JobManifest) => Promise<CompletedMarker | undefined>;
  /** Hold a module (verified against its hash) for the coming deploy. */
  holdModule: (module: CachedModule) => void;
  /** Plan, check and place a job again (throws NotEnoughSlotsError without slots). */
  place: (m: MessageOf<'SubmitJob'>, resubmission: Resubmission) => Promise<PlacedJob>;
  /** Deploy a placed job under a JobMaster. */
  start: (placed: PlacedJob) => void;
  cancel: (jobId: string, reason: string) => void;
}

export class HaJobs {
  /** Jobs waiting for slots, with the restore point the takeover decided for each. */
  private readonly parked = new Map<string, { manifest: JobManifest; restore: CompletedMarker | undefined }>();
  private retrying = false;

  constructor(private readonly deps: HaJobsDeps) {}

  /** Persist a running job for a successor; a job that cannot be persisted is cancelled and the error thrown. */
  async persist(job: JobState, m: SubmittedAs, submittedAt = job.startedAt): Promise<void> {
    const manifest: JobManifest = {
      jobId: job.id,
      jobName: job.name,
      specJson: m.specJson,
      params: m.params,
      buildParallelism: m.buildParallelism,
      checkpoint: m.checkpoint,
      moduleSha256: job.module.sha256,
      submittedAt,
      ...(m.autoscaleMax > 0 ? { autoscale: { min: m.autoscaleMin, max: m.autoscaleMax } } : {}),
    };
    try {
      await this.deps.store.persist(manifest, job.module);
    } catch (err) {
      const why = `could not persist job ${job.id} for high availability: ${(err as Error).message}`;
      this.deps.cancel(job.id, why);
      throw new ClinkError('CLINK_ERR_STORAGE', why, { cause: err });
    }
  }

  /** A job ended: record it (errors are logged; a superseded leader's write is refused). */
  ended(view: JobView): void {
    this.deps.store
      .ended(view as unknown as HistoryRecord)
      .catch((err: unknown) =>
        this.deps.log.error(
          { err, jobId: view.jobId },
          `could not record the end of job ${view.jobId} in the HA job store: ${(err as Error).message}`,
        ),
      );
  }

  /** The ended jobs on record, for the job list (oldest first). */
  history(limit: number): Promise<JobView[]> {
    return this.deps.store.history(limit) as unknown as Promise<JobView[]>;
  }

  /** Take over every persisted job; resolves once each is deployed, parked or dropped. */
  async run(): Promise<void> {
    const manifests = await this.deps.store.manifests();
    if (manifests.length === 0) return;
    const span = (this.deps.tracer ?? NO_TRACING).start('clink.takeover', {
      'clink.epoch': this.deps.epoch,
      'clink.jobs': manifests.length,
    });
    try {
      await this.takeOver(manifests);
      span.end({ 'clink.jobs.parked': this.parked.size });
    } catch (err) {
      span.end({}, (err as Error).message);
      throw err;
    }
  }

  private async takeOver(manifests: Awaited<ReturnType<HaJobStore['manifests']>>): Promise<void> {
    // Claimed first, before the wait: from now on the superseded leader cannot write these records.
    for (const m of manifests) await this.deps.store.claim(m);
    this.deps.log.info(
      `taking over ${manifests.length} jobs at epoch ${this.deps.epoch}; waiting for worker registrations to settle`,
    );
    await this.deps.settle(RECOVERY_WORKER_SETTLE_MS, RECOVERY_WORKER_SETTLE_DEADLINE_MS);
    for (const m of manifests) {
      if (this.deps.running(m.jobId)) continue;
      let restore: CompletedMarker | undefined;
      try {
        // Undefined: none of its own (or every one damaged): it resumes from the restore point it was submitted with.
        restore = m.checkpoint.checkpointDir ? await this.deps.ownRestore(m) : undefined;
      } catch (err) {
        this.drop(m, err);
        continue;
      }
      await this.attempt(m, restore);
    }
  }

  /** A worker registered: parked jobs try again (one pass at a time). */
  async capacityChanged(): Promise<void> {
    if (this.retrying || this.parked.size === 0) return;
    this.retrying = true;
    try {
      for (const [id, p] of [...this.parked]) {
        this.parked.delete(id);
        await this.attempt(p.manifest, p.restore);
      }
    } finally {
      this.retrying = false;
    }
  }

  private async attempt(manifest: JobManifest, restore: CompletedMarker | undefined): Promise<void> {
    try {
      await this.resubmit(manifest, restore);
    } catch (err) {
      if (err instanceof NotEnoughSlotsError) {
        this.parked.set(manifest.jobId, { manifest, restore });
        this.deps.log.warn(
          { jobId: manifest.jobId },
          `job ${manifest.jobId} (${manifest.jobName}) waits for slots to be taken over: ${err.message}; it is tried again when a worker registers`,
        );
        return;
      }
      this.drop(manifest, err);
    }
  }

  private async resubmit(manifest: JobManifest, ownRestore: CompletedMarker | undefined): Promise<void> {
    const module = await this.deps.store.module(manifest.moduleSha256);
    this.deps.holdModule(module);
    const m = {
      jobName: manifest.jobName,
      specJson: manifest.specJson,
      params: manifest.params,
      buildParallelism: manifest.buildParallelism,
      checkpoint: manifest.checkpoint,
      modules: [module],
      autoscaleMin: manifest.autoscale?.min ?? 0,
      autoscaleMax: manifest.autoscale?.max ?? 0,
    } as unknown as MessageOf<'SubmitJob'>;
    const placed = await this.deps.place(m, {
      jobId: manifest.jobId,
      ownRestore,
      waitForSlotsMs: 0,
      submittedAt: manifest.submittedAt,
    });
    if (this.deps.running(manifest.jobId)) return;
    const { job, restore } = placed;
    this.deps.start(placed);
    this.deps.metrics.haJobsRecovered.inc();
    this.deps.log.info(
      { jobId: job.id, epoch: this.deps.epoch, restoredFrom: restore?.checkpointId ?? 0 },
      `job ${job.id} (${job.name}) taken over at epoch ${this.deps.epoch} from ${describeRestorePoint(job, restore)}`,
    );
  }

  private drop(m: JobManifest, err: unknown): void {
    this.deps.metrics.haRecoveryFailed.inc();
    this.deps.log.error(
      { jobId: m.jobId, err },
      `job ${m.jobId} (${m.jobName}) could not be taken over and is not running: ${(err as Error).message}; submit it again`,
    );
  }
}
