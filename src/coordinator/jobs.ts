/**
 * The coordinator's jobs: what clients and the HTTP API ask of them (submit, cancel, savepoint, rescale,
 * the views), what the workers' frames and heartbeats tell each job's JobMaster, the HA takeover, and
 * the watchdog's sweep of every job. Each service it builds gets typed ports (JobServices, RescaleTarget,
 * ClientRequests), not closures over the coordinator; the coordinator routes frames here.
 */
import { ClinkError } from '../errors.js';
import type { HaJobStore } from '../ha/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics, Tracer } from '../metrics/index.js';
import { createPhysicalPlan, type JobGraphSpec } from '../plan/index.js';
import type { Message, MessageOf } from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import { Autoscalers } from './autoscaler.js';
import type { CompletedCheckpoint } from './checkpoint-ports.js';
import { diskCheckpointStorage } from './checkpoint-storage.js';
import type { ClientRequests } from './client-front.js';
import type { ClientSession, ClientSessions } from './client-sessions.js';
import { COORDINATOR_HISTORY_CAP, type CoordinatorConfig } from './config.js';
import { Deployer } from './deployer.js';
import { HaJobs } from './ha-jobs.js';
import { HotCutover } from './hot-rescale.js';
import { JobBook, type JobDetail } from './job-book.js';
import { JobMaster, type JobFrame, type JobServices } from './job-master.js';
import type { CachedModule, JobState, JobView, WorkerSession } from './job-state.js';
import { checkSubmitSdk, placeSubmittedJob, type PlacedJob, type SubmissionDeps } from './job-submission.js';
import { jobView } from './job-views.js';
import { ModuleCache } from './module-cache.js';
import { planRescale, Rescaler, type RescaleOutcome, type RescaleRequest } from './rescaler.js';
import { diskRestoreStore, newestOwnRestore } from './restore-points.js';
import { SlotWaiter } from './slot-waiter.js';

/** What the jobs use of the worker sessions (the WorkerRegistry). */
export interface WorkerSessions {
  readonly sessions: ReadonlyMap<string, WorkerSession>;
  readonly lastRegistrationAt: number;
  active(): WorkerSession[];
  post(s: WorkerSession, m: Message, lane?: 'bulk'): void;
}

export interface JobsDeps {
  config: CoordinatorConfig;
  clock: Clock;
  log: Logger;
  metrics: ClinkMetrics;
  tracer: Tracer;
  workers: WorkerSessions;
  clients: ClientSessions;
  /** HA: where submitted jobs are persisted (at `config.epoch`) for a successor to take over. */
  jobStore?: HaJobStore;
}

export class Jobs implements ClientRequests {
  /** Running jobs (each with its JobMaster) and ended ones. */
  private readonly book = new JobBook();
  private readonly modules: ModuleCache;
  private readonly slots: SlotWaiter;
  private readonly rescaler: Rescaler;
  private readonly cutover: HotCutover;
  private readonly autoscalers: Autoscalers;
  /** What every JobMaster is built with. */
  private readonly services: JobServices;
  private readonly ha: HaJobs | undefined;
  private stopping = false;

  constructor(private readonly deps: JobsDeps) {
    const { config, clock, log, metrics, tracer, workers } = deps;
    const post = (s: WorkerSession, m: Message, lane?: 'bulk'): void => workers.post(s, m, lane);
    this.modules = new ModuleCache(metrics);
    this.slots = new SlotWaiter({
      clock,
      active: () => workers.active(),
      lastRegistrationAt: () => workers.lastRegistrationAt,
    });
    const deployer = new Deployer({ log, sessions: workers.sessions, modules: this.modules, post });
    this.services = {
      config,
      clock,
      log,
      metrics,
      tracer,
      checkpoints: { clock, storage: diskCheckpointStorage(config.epoch), log, metrics, tracer },
      slots: this.slots,
      deployer,
      restores: diskRestoreStore,
      post,
      stopping: () => this.stopping,
      capacityChanged: () => this.slots.capacityChanged(),
      ended: (job, completion) => this.ended(job, completion),
    };
    // Each step of a hot rescale is a round of frames (the deploy one a module load): far below a drain's bound.
    const stepTimeoutMs = Math.min(config.restartDrainTimeoutMs, 30_000);
    this.cutover = new HotCutover({
      clock,
      log,
      post,
      // Within a step's time, and not for a job that stopped meanwhile (a lost worker restarts it).
      place: (job, subtasks) =>
        this.slots.place(job.id, subtasks, stepTimeoutMs, { giveUp: () => job.state !== 'RUNNING' || !job.cutover }),
      newestCheckpoint: (job) => newestOwnRestore(diskRestoreStore, log, job, false),
      slotSharing: config.slotSharing,
      stepTimeoutMs,
    });
    this.rescaler = new Rescaler({
      clock,
      log,
      plan: planRescale,
      totalSlots: () => [...workers.sessions.values()].reduce((n, s) => n + s.slots, 0),
      slotSharing: config.slotSharing,
      persist: async (job, staged) => {
        const autoscale = {
          autoscaleMin: job.autoscale?.policy.min ?? 0,
          autoscaleMax: job.autoscale?.policy.max ?? 0,
        };
        await this.ha?.persist(job, {
          specJson: staged.specJson,
          params: job.params,
          buildParallelism: staged.buildParallelism,
          checkpoint: job.checkpoint,
          ...autoscale,
        });
      },
      cutover: this.cutover,
      settleTimeoutMs: config.restartDrainTimeoutMs + config.restartCapacityTimeoutMs,
    });
    this.autoscalers = new Autoscalers({
      log,
      clock,
      rescale: (job, to, cause) => this.rescale(job.id, { parallelism: to, operators: {} }, cause),
    });
    const store = deps.jobStore;
    this.ha =
      store &&
      new HaJobs({
        store,
        epoch: config.epoch,
        log,
        metrics,
        tracer,
        settle: (stableMs, maxMs) => this.slots.settle(stableMs, maxMs),
        running: (jobId) => this.book.has(jobId),
        ownRestore: (m) =>
          newestOwnRestore(
            diskRestoreStore,
            log,
            { id: m.jobId, plan: createPhysicalPlan(JSON.parse(m.specJson) as JobGraphSpec), checkpoint: m.checkpoint },
            m.checkpoint.restoreFromDir !== '',
          ),
        holdModule: (module) => void this.resolveModules({ modules: [module] }),
        place: (m, resubmission) => {
          if (this.stopping) throw new ClinkError('CLINK_ERR_CANCELLED', 'the coordinator is stopping');
          return placeSubmittedJob(m, undefined, this.submission(), resubmission);
        },
        start: (placed) => void this.start(placed),
        cancel: (jobId, reason) => void this.cancel(jobId, reason),
      });
  }

  get size(): number {
    return this.book.size;
  }

  runningJobs(): JobState[] {
    return this.book.runningJobs();
  }

  // ---------------------------------------------------------------- what the workers tell

  /** A worker registered: placements waiting for slots look again, and so do parked HA jobs. */
  capacityChanged(): void {
    this.slots.capacityChanged();
    void this.ha?.capacityChanged();
  }

  /** A frame of worker session `s` about a job: its JobMaster's, or (a hot rescale's ack) the cutover's. */
  onFrame(s: WorkerSession, m: JobFrame | MessageOf<'BeginRescaleAck'>): void {
    const master = this.book.master(m.jobId);
    if (!master) return;
    if (m.type === 'BeginRescaleAck') this.cutover.onAck(master.job, s, m);
    else master.onFrame(s, m);
  }

  /** A heartbeat: each job's totals on the worker, and each running subtask's report, go to its JobMaster. */
  onProgress(s: WorkerSession, m: MessageOf<'Heartbeat'>): void {
    const now = this.deps.clock.now();
    for (const p of m.jobs) this.book.master(p.jobId)?.onProgress(s.id, p, undefined, now);
    for (const p of m.subtasks) this.book.master(p.jobId)?.onProgress(s.id, undefined, p, now);
  }

  /** A worker session is gone (lost, or its retirement done): each job heals or fails. */
  onSessionGone(s: WorkerSession, error: string): void {
    for (const master of this.book.masters()) master.onSessionGone(s, error);
  }

  /** The watchdog's sweep: every job's drains, peer failures and checkpoints; the autoscalers. */
  tick(now: number): void {
    for (const master of this.book.masters()) master.tick(now);
    this.autoscalers.tick(this.book.runningJobs(), now);
  }

  /** A client session some running job will report to. */
  hasClient(c: ClientSession): boolean {
    return this.book.runningJobs().some((j) => j.client === c);
  }

  // ---------------------------------------------------------------- what clients ask

  resolveModules(m: Pick<MessageOf<'SubmitJob'>, 'modules'>): string[] {
    return this.modules.resolve(m.modules, () => new Set(this.book.runningJobs().map((j) => j.module.sha256)));
  }

  /** A submit that did not come over the control port (the HTTP API): the same gates, its module kept, then submit(). */
  async submitFromOutside(m: MessageOf<'SubmitJob'>): Promise<JobState> {
    checkSubmitSdk(m);
    const missing = this.resolveModules(m);
    if (missing.length > 0)
      throw new ClinkError(
        'CLINK_ERR_MODULE_MISSING',
        `this coordinator does not hold job module ${missing.join(', ')}: upload it`,
      );
    return this.submit(m);
  }

  /** A job module this coordinator holds (submitted before, by any client), by its SHA-256. */
  cachedModule(sha256: string): CachedModule | undefined {
    return this.modules.get(sha256);
  }

  /** Plan, place and deploy a job. Throws NotEnoughSlotsError (after submitWaitForSlotsMs) or a plan error. */
  async submit(m: MessageOf<'SubmitJob'>, client?: ClientSession): Promise<JobState> {
    if (this.stopping) throw new ClinkError('CLINK_ERR_CANCELLED', 'the coordinator is stopping');
    const restoreDir = m.checkpoint.restoreFromDir;
    const span = this.deps.tracer.start('clink.submit', {
      'clink.job.name': m.jobName,
      ...(restoreDir ? { 'clink.restore.dir': restoreDir } : {}),
    });
    try {
      const placed = await placeSubmittedJob(m, client, this.submission());
      const job = this.start(placed);
      this.deps.metrics.jobsSubmitted.inc();
      await this.ha?.persist(job, m);
      span.end({
        'clink.job.id': job.id,
        'clink.tasks': job.plan.tasks.length,
        'clink.subtasks': job.subtasks.length,
        'clink.restore.checkpoint_id': placed.restore?.checkpointId ?? 0,
      });
      return job;
    } catch (err) {
      span.end({}, (err as Error).message);
      throw err;
    }
  }

  /** Deploy a placed job under a new JobMaster. */
  private start(placed: PlacedJob): JobState {
    // From the placement to the deploy nothing awaits: the slots it found are still free when charged,
    // and every worker it names is still registered.
    const { placement, restore } = placed;
    const master = new JobMaster(placed.job, this.services, restore?.checkpointId ?? 0);
    const job = master.job;
    this.book.add(master);
    master.deploy(placement, restore);
    const { local, socket } = job.edges;
    const what = `${job.subtasks.length} subtasks of ${job.name} on ${placement.size} workers`;
    this.deps.log.info(
      { jobId: job.id, subtasks: job.subtasks.length, workers: placement.size, edges: job.edges },
      `job ${job.id} placed: edges local=${local} socket=${socket} (${what})`,
    );
    return job;
  }

  private submission(): SubmissionDeps {
    const { config, clock, log } = this.deps;
    return { config, clock, log, slots: this.slots, module: (sha256) => this.modules.get(sha256) };
  }

  /** Cancel a running job. Its subtasks stop; it ends CANCELED once they have. */
  cancel(jobId: string, reason = 'cancelled'): { ok: boolean; message: string } {
    const master = this.book.master(jobId);
    if (!master) {
      const done = this.book.ended(jobId);
      return { ok: false, message: done ? `job ${jobId} already ended (${done.state})` : `no job ${jobId}` };
    }
    master.cancel(reason);
    return { ok: true, message: `job ${jobId} cancelling` };
  }

  /** Take a savepoint into `dir` (see CheckpointCoordinator.savepoint); with `cancelAfter` the job is then cancelled. */
  async savepoint(
    jobId: string,
    dir: string,
    cancelAfter: boolean,
  ): Promise<{ ok: boolean; message: string; path: string }> {
    const master = this.book.master(jobId);
    if (!master) return { ok: false, message: `no running job ${jobId}`, path: '' };
    return master.job.checkpointing.savepoint(dir, cancelAfter);
  }

  /** Rescale a running job (see Rescaler); resolves once it runs again, or refused. */
  async rescale(jobId: string, request: RescaleRequest, cause: string): Promise<RescaleOutcome> {
    const master = this.book.master(jobId);
    if (!master) return { ok: false, code: 'CLINK_ERR_NOT_FOUND', message: `no running job ${jobId}` };
    return this.rescaler.rescale(master, request, cause);
  }

  /** The client's session closed: the jobs it submitted have no one to tell when they end. */
  forget(c: ClientSession): void {
    for (const m of this.book.masters()) if (m.job.client === c) m.forgetClient();
  }

  /** A job has ended: it leaves the running set for the history, and its client is told. */
  private ended(job: JobState, completion: MessageOf<'JobCompleted'>): void {
    this.book.end(job);
    if (job.client) void this.deps.clients.send(job.client, completion);
    this.ha?.ended(jobView(job, this.deps.clock.now()));
  }

  // ---------------------------------------------------------------- views

  listJobs(includeCompleted = true): JobView[] {
    return this.book.list(includeCompleted, this.deps.clock.now());
  }

  job(jobId: string): JobDetail | undefined {
    return this.book.view(jobId, this.deps.clock.now());
  }

  /** Completed checkpoints of a job (newest last). */
  checkpointsOf(jobId: string): readonly CompletedCheckpoint[] | undefined {
    return this.book.find(jobId)?.checkpointing.history.recent;
  }

  // ---------------------------------------------------------------- HA and shutdown

  /** HA: take over the jobs the previous leader persisted (see HaJobs), once the control port listens. */
  async takeOver(): Promise<void> {
    if (!this.ha) return;
    this.book.reload(await this.ha.history(COORDINATOR_HISTORY_CAP));
    await this.ha.run();
  }

  /** No job starts or restarts from here on; slot waits give up. */
  stop(): void {
    this.stopping = true;
    this.slots.stop();
  }
}
