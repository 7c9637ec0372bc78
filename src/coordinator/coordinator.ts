/**
 * The Coordinator: the door and the router. It admits connections (AdmissionGate), keeps worker
 * sessions (WorkerRegistry), answers clients (ClientSessions), routes each worker frame about a job to
 * that job's JobMaster, and runs the watchdog sweep. Jobs are planned and placed by job-submission.ts,
 * deployed by the Deployer, healed by JobRecovery as the failure handler decides, and checkpointed by
 * the CheckpointCoordinator; every job state change goes through the lifecycle table.
 *
 * Everything runs on the event loop, on an injected Clock. Each connection is admitted on its own
 * async path under a deadline; each worker session reads on its own loop, answers heartbeats on the
 * spot and hands every other frame to a FIFO dispatch chain; everything sent to a worker goes through
 * its Outbox, so no worker can hold the coordinator up.
 */
import type { Server } from 'node:net';
import { ClinkError } from '../errors.js';
import { coordinatorConfigFindings, refuseOnErrors } from '../lint/index.js';
import type { Logger } from '../log/index.js';
import { NO_TRACING, type ClinkMetrics, type Tracer } from '../metrics/index.js';
import { FrameBudget, listenOn, PeerRejections, type FrameConnection, type TlsServerConfig } from '../net/index.js';
import { createPhysicalPlan, type JobGraphSpec } from '../plan/index.js';
import type { Message, MessageOf } from '../protocol/index.js';
import { systemClock, type Clock } from '../util/index.js';
import { AdmissionLogLimiter } from './admission.js';
import { PeerChecks } from './peer-checks.js';
import { AdmissionGate } from './admission-gate.js';
import { CheckpointCoordinator } from './checkpoint-coordinator.js';
import { diskCheckpointStorage } from './checkpoint-storage.js';
import { ClientFront } from './client-front.js';
import { type ClientSession, ClientSessions } from './client-sessions.js';
import { COORDINATOR_HISTORY_CAP, DEFAULT_COORDINATOR_CONFIG, type CoordinatorConfig } from './config.js';
import { Deployer } from './deployer.js';
import { JobMaster, postToJob, type JobMasterDeps } from './job-master.js';
import { JobRecovery } from './job-recovery.js';
import { type CachedModule, type JobState, type JobView, type WorkerSession, type WorkerView } from './job-state.js';
import { checkSubmitSdk, placeSubmittedJob, type PlacedJob, type SubmissionDeps } from './job-submission.js';
import { HaJobs } from './ha-jobs.js';
import type { HaJobStore } from '../ha/index.js';
import { jobView } from './job-views.js';
import { JobBook, type JobDetail } from './job-book.js';
import { ModuleCache } from './module-cache.js';
import { SlotWaiter } from './slot-waiter.js';
import { WorkerRegistry, type DepartedSession } from './worker-registry.js';
import { recordHeartbeat } from './task-metrics.js';
import { planRescale, Rescaler, type RescaleOutcome, type RescaleRequest } from './rescaler.js';
import { Autoscalers } from './autoscaler.js';
import { HotCutover } from './hot-rescale.js';

export interface CoordinatorDeps {
  log: Logger;
  metrics: ClinkMetrics;
  /** Time and timers. @default systemClock */
  clock?: Clock;
  /** HA: where submitted jobs are persisted (at `config.epoch`) for a successor to take over. */
  jobStore?: HaJobStore;
  /** The cluster's token (CLINK_AUTH_TOKEN): every Register and HelloClient must carry it. Kept out of the config, which the API serves. */
  authToken?: string;
  /** The control port's TLS (mTLS when it names a client CA). */
  tls?: TlsServerConfig;
  /** Spans of submits, checkpoints, restarts and takeovers (--otlp-endpoint). @default NO_TRACING */
  tracer?: Tracer;
}

export class Coordinator {
  readonly config: CoordinatorConfig;
  private server!: Server;
  private readonly registry: WorkerRegistry;
  private readonly clients: ClientSessions;
  private readonly clientFront: ClientFront;
  /** Connections being admitted (accept to first frame), with how far each has got. */
  private readonly admission: AdmissionGate;
  /** Running jobs (each with its JobMaster) and ended ones. */
  private readonly jobs = new JobBook();
  private readonly log: Logger;
  private readonly watchdogLog: Logger;
  private readonly tracer: Tracer;
  /** Refusals and evictions before admission: rate-limited, since a flood makes many (the counters are exact). */
  private readonly admissionLog: AdmissionLogLimiter;
  private readonly rejections: PeerRejections;
  private readonly peerChecks: PeerChecks;
  private stopWatchdog: (() => void) | undefined;
  private readonly clock: Clock;
  private lastSweep = 0;
  private stopping = false;
  private readonly modules: ModuleCache;
  private readonly slots: SlotWaiter;
  private readonly deployer: Deployer;
  private readonly checkpoints: CheckpointCoordinator;
  private readonly recovery: JobRecovery;
  private readonly rescaler: Rescaler;
  private readonly cutover: HotCutover;
  private readonly autoscalers: Autoscalers;
  /** What every JobMaster is built with. */
  private readonly jobDeps: JobMasterDeps;
  private readonly ha: HaJobs | undefined;
  port = 0;

  private constructor(
    config: Partial<CoordinatorConfig>,
    private readonly deps: CoordinatorDeps,
  ) {
    this.config = Object.freeze({ ...DEFAULT_COORDINATOR_CONFIG, ...config });
    // A setting that would make every worker be lost (a zero outbound bound) is refused, as clink node refuses it.
    refuseOnErrors(coordinatorConfigFindings(this.config));
    const clock = (this.clock = deps.clock ?? systemClock);
    const { metrics } = deps;
    this.tracer = deps.tracer ?? NO_TRACING;
    this.lastSweep = clock.now();
    const log = (this.log = deps.log.child({ component: 'coordinator' }));
    this.watchdogLog = deps.log.child({ component: 'coordinator.watchdog' });
    this.admissionLog = new AdmissionLogLimiter(deps.log.child({ component: 'coordinator.admission' }));
    this.peerChecks = new PeerChecks(metrics, log, this.admissionLog, deps.authToken);
    this.rejections = new PeerRejections('coordinator', deps.log.child({ component: 'coordinator.admission' }), metrics, clock);
    this.admission = new AdmissionGate(this.config, {
      clock,
      log,
      metrics,
      admissionLog: this.admissionLog,
      rejections: this.rejections,
      budget: new FrameBudget(this.config.maxInflightFrameBytes),
      stopping: () => this.stopping,
      route: (conn, first, admissionId) => this.route(conn, first, admissionId),
      ...(deps.tls ? { tls: deps.tls } : {}),
    });
    const registry = (this.registry = new WorkerRegistry({
      config: this.config,
      clock,
      log,
      watchdogLog: this.watchdogLog,
      admissionLog: this.admissionLog,
      metrics,
      onRegistered: () => {
        this.slots.capacityChanged();
        void this.ha?.capacityChanged();
      },
      onProgress: (s, m) => recordHeartbeat((id) => this.jobs.master(id)?.job, s.id, m, clock.now()),
      dispatch: (s, m) => this.dispatchWorker(s, m),
      onGone: (s, error) => this.onSessionGone(s, error),
    }));
    const post = (s: WorkerSession, m: Message, lane?: 'bulk'): void => registry.post(s, m, lane);
    this.modules = new ModuleCache(metrics);
    this.slots = new SlotWaiter({ clock, active: () => registry.active(), lastRegistrationAt: () => registry.lastRegistrationAt });
    this.deployer = new Deployer({ log, sessions: registry.sessions, modules: this.modules, post });
    // The job services act on a job through its JobMaster, and on nothing once it has ended.
    const jobActions = {
      postToJob: (job: JobState, m: Message) => postToJob(job, m, post),
      failJob: (job: JobState, reason: string) => this.onJob(job, (j) => j.fail(reason)),
      maybeComplete: (job: JobState) => this.onJob(job, (j) => j.maybeComplete()),
    };
    this.checkpoints = new CheckpointCoordinator({
      clock,
      storage: diskCheckpointStorage(this.config.epoch),
      ...jobActions,
      finalFailed: (job, reason, fatal) => this.onJob(job, (j) => j.heal({ error: reason, fatal })),
      cancel: (jobId, reason) => void this.cancel(jobId, reason),
      log,
      metrics,
      restartBudgetResetAfterMs: this.config.restartBudgetResetAfterMs,
      tracer: this.tracer,
    });
    this.recovery = new JobRecovery({
      config: this.config,
      clock,
      log,
      metrics,
      tracer: this.tracer,
      checkpoints: this.checkpoints,
      stopping: () => this.stopping,
      slots: this.slots,
      post,
      ...jobActions,
      finishSubtask: (job, st, error) => this.onJob(job, (j) => j.finishSubtask(st, error)),
      deploy: (job, placement, restore) => this.deployer.deploy(job, placement, restore),
    });
    this.cutover = new HotCutover({
      clock,
      log,
      checkpoints: this.checkpoints,
      deployer: this.deployer,
      post,
      // Within a step's time, and not for a job that stopped meanwhile (a lost worker restarts it).
      place: (job, subtasks) => this.slots.place(job.id, subtasks, Math.min(this.config.restartDrainTimeoutMs, 30_000), { giveUp: () => job.state !== 'RUNNING' || !job.cutover }),
      newestCheckpoint: (job) => this.recovery.newestOwnRestore(job, false),
      replan: (job, staged) => this.recovery.beginRescale(job, staged),
      slotSharing: this.config.slotSharing,
      // Each step is a round of frames (the deploy one a module load): far below a drain's bound.
      stepTimeoutMs: Math.min(this.config.restartDrainTimeoutMs, 30_000),
    });
    this.rescaler = new Rescaler({
      clock,
      log,
      checkpoints: this.checkpoints,
      recovery: this.recovery,
      plan: planRescale,
      totalSlots: () => [...registry.sessions.values()].reduce((n, s) => n + s.slots, 0),
      slotSharing: this.config.slotSharing,
      persist: async (job, staged) => {
        await this.ha?.persist(job, { specJson: staged.specJson, params: job.params, buildParallelism: staged.buildParallelism, checkpoint: job.checkpoint, autoscaleMin: job.autoscale?.policy.min ?? 0, autoscaleMax: job.autoscale?.policy.max ?? 0 });
      },
      cutover: this.cutover,
      settleTimeoutMs: this.config.restartDrainTimeoutMs + this.config.restartCapacityTimeoutMs,
    });
    this.autoscalers = new Autoscalers({ log, clock, rescale: (job, to, cause) => this.rescaler.rescale(job, { parallelism: to, operators: {} }, cause) });
    this.jobDeps = {
      clock,
      log,
      metrics,
      peerVerdictMs: this.config.heartbeatTimeoutMs + this.config.watchdogIntervalMs,
      recovery: this.recovery,
      checkpoints: this.checkpoints,
      deployer: this.deployer,
      post,
      capacityChanged: () => this.slots.capacityChanged(),
      ended: (master) => this.ended(master),
    };
    this.clients = new ClientSessions(
      { maxSessions: this.config.maxClientSessions, idleTimeoutMs: this.config.clientIdleTimeoutMs, maxOutboundBytes: this.config.maxClientOutboundBytes },
      log,
      metrics,
      () => clock.now(),
    );
    this.clientFront = new ClientFront(
      this.clients,
      {
        resolveModules: (m) => this.modules.resolve(m.modules, () => new Set(this.jobs.runningJobs().map((j) => j.module.sha256))),
        submit: (m, c) => this.submit(m, c),
        listJobs: (all) => this.listJobs(all),
        cancel: (jobId, reason) => this.cancel(jobId, reason),
        savepoint: (jobId, dir, cancelAfter) => this.savepoint(jobId, dir, cancelAfter),
        rescale: (jobId, request, cause) => this.rescale(jobId, request, cause),
        forget: (c) => {
          for (const j of this.jobs.runningJobs()) if (j.client === c) delete j.client;
        },
      },
      (line) => this.admissionLog.warn(line),
    );
    const store = deps.jobStore;
    this.ha =
      store &&
      new HaJobs({
        store,
        epoch: this.config.epoch,
        log,
        metrics,
        tracer: this.tracer,
        settle: (stableMs, maxMs) => this.slots.settle(stableMs, maxMs),
        running: (jobId) => this.jobs.has(jobId),
        ownRestore: (m) => this.recovery.newestOwnRestore({ id: m.jobId, plan: createPhysicalPlan(JSON.parse(m.specJson) as JobGraphSpec), checkpoint: m.checkpoint }, m.checkpoint.restoreFromDir !== ''),
        holdModule: (module) => void this.modules.resolve([module], () => new Set(this.jobs.runningJobs().map((j) => j.module.sha256))),
        place: (m, resubmission) => {
          if (this.stopping) throw new ClinkError('CLINK_ERR_CANCELLED', 'the coordinator is stopping');
          return placeSubmittedJob(m, undefined, this.submissionDeps(), resubmission);
        },
        start: (placed) => this.start(placed),
        cancel: (jobId, reason) => void this.cancel(jobId, reason),
      });
  }

  static async start(config: Partial<CoordinatorConfig>, deps: CoordinatorDeps): Promise<Coordinator> {
    const c = new Coordinator(config, deps);
    ({ server: c.server, port: c.port } = await listenOn(c.config.bindHost, c.config.port, { port: '--port', host: '--bind-host' }, (s) => c.admission.admit(s)));
    // Listening, an accept can still fail (out of descriptors): say so, never crash on it.
    c.server.on('error', (err: NodeJS.ErrnoException) => {
      deps.metrics.handshakeFailures.inc();
      c.admissionLog.warn(`accepting a connection failed: ${err.code ?? err.message}${err.code === 'EMFILE' || err.code === 'ENFILE' ? ' (out of file descriptors: raise ulimit -n, or lower --max-pending-connections)' : ''}`);
    });
    c.stopWatchdog = c.clock.every(c.config.watchdogIntervalMs, () => c.sweep());
    deps.metrics.gauge('clink_coordinator_jobs_running', 'Jobs deploying or running', () => c.jobs.size);
    c.log.info({ port: c.port, bindHost: c.config.bindHost }, `coordinator listening on ${c.config.bindHost}:${c.port}`);
    return c;
  }

  // ---------------------------------------------------------------- admission

  /** Where the HTTP API listens, once it does: named to a peer that speaks HTTP to the control port. */
  set httpUrl(url: string | undefined) {
    this.admission.httpUrl = url;
  }

  private async route(conn: FrameConnection, first: Message | null, admissionId: number): Promise<void> {
    if (first === null) {
      conn.close();
      return;
    }
    if (first.type === 'Register') {
      const who = `worker ${first.workerId}`;
      await this.registry.register(conn, first, admissionId, this.peerChecks.refusal(first, who, 'worker', conn.peer));
    } else if (first.type === 'HelloClient') {
      const who = `client ${first.clientName}`;
      await this.clientFront.hello(conn, first, this.peerChecks.refusal(first, who, 'client', conn.peer));
    }
    else {
      this.deps.metrics.malformedFrames.inc({ role: 'coordinator' });
      this.log.warn({ peer: conn.peer }, `connection from ${conn.peer} opened with ${first.type}; expected Register or HelloClient`);
      conn.close();
    }
  }

  // ---------------------------------------------------------------- worker frames

  private dispatchWorker(s: WorkerSession, m: Message): void {
    // Frames of a session declared lost or retired are dropped; a retiring one's are facts still.
    if (s.state !== 'active' && s.state !== 'retiring') return;
    switch (m.type) {
      case 'SubtaskListening':
      case 'SubtaskFinished':
      case 'SubtaskCheckpointed':
      case 'CheckpointCommitted':
      case 'RequestFinalCheckpoint':
        return this.jobs.master(m.jobId)?.onFrame(s, m);
      case 'BeginRescaleAck': {
        const master = this.jobs.master(m.jobId);
        return master && this.cutover.onAck(master.job, s, m);
      }
      default:
        this.log.debug({ workerId: s.id, type: m.type }, `ignoring ${m.type} from worker ${s.id}`);
    }
  }

  // ---------------------------------------------------------------- checkpoints

  /**
   * Take a savepoint into `dir` (see CheckpointCoordinator.savepoint). Resolves once its marker is
   * durable; with `cancelAfter` the job is then cancelled.
   */
  async savepoint(jobId: string, dir: string, cancelAfter: boolean): Promise<{ ok: boolean; message: string; path: string }> {
    const master = this.jobs.master(jobId);
    if (!master) return { ok: false, message: `no running job ${jobId}`, path: '' };
    return this.checkpoints.savepoint(master.job, dir, cancelAfter);
  }

  /** Rescale a running job by drain and replan (see Rescaler); resolves once it runs again, or refused. */
  async rescale(jobId: string, request: RescaleRequest, cause: string): Promise<RescaleOutcome> {
    const master = this.jobs.master(jobId);
    if (!master) return { ok: false, code: 'CLINK_ERR_NOT_FOUND', message: `no running job ${jobId}` };
    return this.rescaler.rescale(master.job, request, cause);
  }

  /** Completed checkpoints of a job (newest last). */
  checkpointsOf(jobId: string): JobState['checkpoints'] | undefined {
    return this.jobs.find(jobId)?.checkpoints;
  }

  /** The JobMaster's action on `job`, or nothing once the job has ended. */
  private onJob(job: JobState, action: (master: JobMaster) => void): void {
    const master = this.jobs.master(job.id);
    if (master?.job === job) action(master);
  }

  /** A job has ended: it leaves the running set for the history, and its client is told. */
  private ended(master: JobMaster): void {
    const job = master.job;
    this.jobs.end(job);
    if (job.client) void this.clients.send(job.client, master.completion());
    this.ha?.ended(jobView(job, this.clock.now()));
  }

  // ---------------------------------------------------------------- liveness

  private sweep(): void {
    const now = this.clock.now();
    const { heartbeatTimeoutMs: hb, outboundStallTimeoutMs: stall, watchdogIntervalMs: interval } = this.config;
    const stallOn = stall > 0 && Number.isFinite(stall);
    const gap = now - this.lastSweep;
    this.lastSweep = now;
    if (gap > interval + Math.min(hb, stallOn ? stall : Infinity)) {
      // This sweep itself is late (the process was paused): nothing could be read or written meanwhile.
      this.watchdogLog.warn(`watchdog sweep came ${gap} ms after the last; judging nothing and restarting every worker's clocks`);
      this.registry.restartClocks(now);
      return;
    }
    for (const master of this.jobs.masters()) master.tick(now);
    this.checkpoints.tick(this.jobs.runningJobs());
    this.autoscalers.tick(this.jobs.runningJobs(), now);
    this.clients.sweep(now, (c) => this.jobs.runningJobs().some((j) => j.client === c));
    this.registry.judge(now);
  }

  /** A worker session is gone (lost, or its retirement done): its unfinished subtasks fail with `error`, and each job heals or fails. */
  private onSessionGone(s: WorkerSession, error: string): void {
    for (const master of this.jobs.masters()) master.onSessionGone(s, error);
  }


  // ---------------------------------------------------------------- client requests

  /** A submit that did not come over the control port (the HTTP API): the same gates, its module kept, then submit(). */
  async submitFromOutside(m: MessageOf<'SubmitJob'>): Promise<JobState> {
    checkSubmitSdk(m);
    const missing = this.modules.resolve(m.modules, () => new Set(this.jobs.runningJobs().map((j) => j.module.sha256)));
    if (missing.length > 0) throw new ClinkError('CLINK_ERR_MODULE_MISSING', `this coordinator does not hold job module ${missing.join(', ')}: upload it`);
    return this.submit(m);
  }

  /** A job module this coordinator holds (submitted before, by any client), by its SHA-256. */
  cachedModule(sha256: string): CachedModule | undefined {
    return this.modules.get(sha256);
  }

  /** Plan, place and deploy a job. Throws NotEnoughSlotsError (after submitWaitForSlotsMs) or a plan error. */
  async submit(m: MessageOf<'SubmitJob'>, client?: ClientSession): Promise<JobState> {
    if (this.stopping) throw new ClinkError('CLINK_ERR_CANCELLED', 'the coordinator is stopping');
    const span = this.tracer.start('clink.submit', { 'clink.job.name': m.jobName, ...(m.checkpoint.restoreFromDir ? { 'clink.restore.dir': m.checkpoint.restoreFromDir } : {}) });
    try {
      const placed = await placeSubmittedJob(m, client, this.submissionDeps());
      this.start(placed);
      this.deps.metrics.jobsSubmitted.inc();
      await this.ha?.persist(placed.job, m);
      span.end({ 'clink.job.id': placed.job.id, 'clink.tasks': placed.job.plan.tasks.length, 'clink.subtasks': placed.job.subtasks.length, 'clink.restore.checkpoint_id': placed.restore?.checkpointId ?? 0 });
      return placed.job;
    } catch (err) {
      span.end({}, (err as Error).message);
      throw err;
    }
  }

  /** Deploy a placed job under a new JobMaster. */
  private start({ job, placement, restore }: PlacedJob): void {
    // From the placement to the deploy nothing awaits: the slots it found are still free when charged,
    // and every worker it names is still registered.
    this.jobs.add(new JobMaster(job, this.jobDeps));
    this.deployer.deploy(job, placement, restore);
    const subtasks = job.subtasks.length;
    this.log.info(
      { jobId: job.id, subtasks, workers: placement.size, edges: job.edges },
      `job ${job.id} placed: edges local=${job.edges.local} socket=${job.edges.socket} (${subtasks} subtasks of ${job.name} on ${placement.size} workers)`,
    );
  }

  // ---------------------------------------------------------------- HA takeover

  /**
   * HA: take over the jobs the previous leader persisted (see Takeover). Called once the control port
   * listens, so the workers can register meanwhile.
   */
  async takeOver(): Promise<void> {
    if (!this.ha) return;
    this.jobs.reload(await this.ha.history(COORDINATOR_HISTORY_CAP));
    await this.ha.run();
  }

  private submissionDeps(): SubmissionDeps {
    return {
      config: this.config,
      clock: this.clock,
      log: this.log,
      slots: this.slots,
      module: (sha256) => this.modules.get(sha256),
    };
  }

  /** Cancel a running job. Its subtasks stop; it ends CANCELED once they have. */
  cancel(jobId: string, reason = 'cancelled'): { ok: boolean; message: string } {
    const master = this.jobs.master(jobId);
    if (!master) {
      const done = this.jobs.ended(jobId);
      return { ok: false, message: done ? `job ${jobId} already ended (${done.state})` : `no job ${jobId}` };
    }
    master.cancel(reason);
    return { ok: true, message: `job ${jobId} cancelling` };
  }

  // ---------------------------------------------------------------- views

  listJobs(includeCompleted = true): JobView[] {
    return this.jobs.list(includeCompleted, this.clock.now());
  }

  job(jobId: string): JobDetail | undefined {
    return this.jobs.view(jobId, this.clock.now());
  }

  workers(): WorkerView[] {
    return this.registry.views(this.clock.now(), this.jobs.runningJobs());
  }

  /** Worker sessions that ended, newest last: lost by a verdict, or retired. */
  departedWorkers(): readonly DepartedSession[] {
    return this.registry.departed;
  }

  // ---------------------------------------------------------------- shutdown

  /**
   * Stop accepting, flush every worker's outbox against one deadline, close every connection. Frames
   * not written by the deadline are discarded and counted (flush_deadline).
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopWatchdog?.();
    this.slots.stop();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.admission.closeAll();
    await this.registry.flushAndClose(this.config.outboundFlushTimeoutMs);
    this.clients.closeAll();
    await closed;
    this.rejections.close();
    this.log.info('coordinator stopped');
  }
}

