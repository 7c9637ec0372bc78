/**
 * The coordinator's book of jobs: the running ones (each with its JobMaster), the ended ones (a ring of
 * COORDINATOR_HISTORY_CAP), and under HA the ended ones a predecessor recorded (reloaded at takeover).
 * Every lookup and listing the API serves reads here.
 */
import { COORDINATOR_HISTORY_CAP } from './config.js';
import type { JobMaster } from './job-master.js';
import type { JobState, JobView } from './job-state.js';
import { jobView } from './job-views.js';
import { jobDetailParts, type JobDetailParts } from './job-graph.js';

/** GET /api/v1/jobs/:id: the job's view and, while the coordinator holds its state, its detail. */
export type JobDetail = JobView & Partial<JobDetailParts>;

export class JobBook {
  private readonly running = new Map<string, JobMaster>();
  private readonly history: JobState[] = [];
  /** HA: ended jobs reloaded from the job store at takeover (oldest first). */
  private reloaded: JobView[] = [];

  master(jobId: string): JobMaster | undefined {
    return this.running.get(jobId);
  }

  has(jobId: string): boolean {
    return this.running.has(jobId);
  }

  get size(): number {
    return this.running.size;
  }

  add(master: JobMaster): void {
    this.running.set(master.job.id, master);
  }

  /** A job ended: it moves from the running set to the history. */
  end(job: JobState): void {
    this.running.delete(job.id);
    this.history.push(job);
    if (this.history.length > COORDINATOR_HISTORY_CAP) this.history.shift();
  }

  masters(): JobMaster[] {
    return [...this.running.values()];
  }

  runningJobs(): JobState[] {
    return this.masters().map((m) => m.job);
  }

  /** A running or ended job (not a reloaded one). */
  find(jobId: string): JobState | undefined {
    return this.running.get(jobId)?.job ?? this.history.find((h) => h.id === jobId);
  }

  ended(jobId: string): JobState | undefined {
    return this.history.find((h) => h.id === jobId);
  }

  reload(views: JobView[]): void {
    this.reloaded = views;
  }

  /** Running jobs, then ended ones newest first (and, with `includeCompleted`, those a predecessor recorded). */
  list(includeCompleted: boolean, now: number): JobView[] {
    const all = [...this.runningJobs(), ...(includeCompleted ? [...this.history].reverse() : [])];
    const views = all.map((j) => jobView(j, now));
    if (!includeCompleted) return views;
    const seen = new Set(views.map((v) => v.jobId));
    return [...views, ...[...this.reloaded].reverse().filter((v) => !seen.has(v.jobId))];
  }

  /** A job's view with its graph, checkpoint settings and checkpoint in flight (a predecessor's record has only its view). */
  view(jobId: string, now: number): JobDetail | undefined {
    const j = this.find(jobId);
    return j ? { ...jobView(j, now), ...jobDetailParts(j) } : this.reloaded.find((v) => v.jobId === jobId);
  }
}
