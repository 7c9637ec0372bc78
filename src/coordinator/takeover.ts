/**
 * Takeover: what a newly elected leader does with the jobs its predecessor persisted. It reloads the
 * ended jobs into its history, lets worker registrations settle (the reconnecting workers arrive within
 * moments of each other, and a redeploy at the first one would put every subtask on it), then submits
 * each persisted job again under its id, from its newest completed checkpoint (else the restore point
 * it was submitted with, else the beginning: the rule a restart follows). A job that fails only for
 * slots is parked and tried again whenever a worker registers; any other failure drops it, loudly.
 */
import type { HaJobStore, JobManifest } from '../ha/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { CompletedMarker } from './checkpoints.js';
import type { JobView } from './job-state.js';
import { NotEnoughSlotsError } from './placement.js';

/** Registrations must have been quiet this long before jobs are placed... */
export const RECOVERY_WORKER_SETTLE_MS = 1_000;
/** ...but the takeover waits at most this long for that. */
export const RECOVERY_WORKER_SETTLE_DEADLINE_MS = 5_000;

export interface TakeoverDeps {
  store: HaJobStore;
  log: Logger;
  metrics: ClinkMetrics;
  /** Resolves once registrations have been quiet for `stableMs`, or after `maxMs`. */
  settle: (stableMs: number, maxMs: number) => Promise<void>;
  running: (jobId: string) => boolean;
  /** The job's newest completed checkpoint of its own (undefined when none; throws when every one is damaged). */
  ownRestore: (m: JobManifest) => Promise<CompletedMarker | undefined>;
  /** Submit the job again (its module bytes loaded from the store); throws NotEnoughSlotsError without slots. */
  resubmit: (m: JobManifest, ownRestore: CompletedMarker | undefined) => Promise<void>;
}

export class Takeover {
  /** Jobs waiting for slots, with the restore point the takeover decided for each. */
  private readonly parked = new Map<string, { manifest: JobManifest; restore: CompletedMarker | undefined }>();
  private retrying = false;

  constructor(private readonly deps: TakeoverDeps) {}

  /** The ended jobs on record, for the job list. */
  history(limit: number): Promise<JobView[]> {
    return this.deps.store.history(limit) as unknown as Promise<JobView[]>;
  }

  /** Take over every persisted job; resolves once each is deployed, parked or dropped. */
  async run(): Promise<void> {
    const manifests = await this.deps.store.manifests();
    if (manifests.length === 0) return;
    this.deps.log.info(`taking over ${manifests.length} jobs; waiting for worker registrations to settle`);
    await this.deps.settle(RECOVERY_WORKER_SETTLE_MS, RECOVERY_WORKER_SETTLE_DEADLINE_MS);
    for (const m of manifests) {
      if (this.deps.running(m.jobId)) continue;
      let restore: CompletedMarker | undefined;
      try {
        restore = await this.deps.ownRestore(m);
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

  get parkedJobs(): string[] {
    return [...this.parked.keys()];
  }

  private async attempt(m: JobManifest, restore: CompletedMarker | undefined): Promise<void> {
    try {
      await this.deps.resubmit(m, restore);
      this.deps.metrics.haJobsRecovered.inc();
    } catch (err) {
      if (err instanceof NotEnoughSlotsError) {
        this.parked.set(m.jobId, { manifest: m, restore });
        this.deps.log.warn({ jobId: m.jobId }, `job ${m.jobId} (${m.jobName}) waits for slots to be taken over: ${err.message}; it is tried again when a worker registers`);
        return;
      }
      this.drop(m, err);
    }
  }

  private drop(m: JobManifest, err: unknown): void {
    this.deps.metrics.haRecoveryFailed.inc();
    this.deps.log.error({ jobId: m.jobId, err }, `job ${m.jobId} (${m.jobName}) could not be taken over and is not running: ${(err as Error).message}; submit it again`);
  }
}
