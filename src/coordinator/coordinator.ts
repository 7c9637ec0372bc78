/**
 * The Coordinator: the door and the router. It admits connections (AdmissionGate), keeps worker
 * sessions (WorkerRegistry), answers clients (ClientSessions, ClientFront), routes each worker frame
 * about a job to the jobs (Jobs: each job's JobMaster), and runs the watchdog sweep. Jobs are planned
 * and placed by job-submission.ts, deployed and healed by their JobMaster as the failure handler
 * decides, and checkpointed by their own CheckpointCoordinator; every job state change goes through
 * the lifecycle table.
 *
 * Everything runs on the event loop, on an injected Clock. Each connection is admitted on its own
 * async path under a deadline; each worker session reads on its own loop, answers heartbeats on the
 * spot and hands every other frame to a FIFO dispatch chain; everything sent to a worker goes through
 * its Outbox, so no worker can hold the coordinator up.
 */
import type { Server } from 'node:net';
import { coordinatorConfigFindings, refuseOnErrors } from '../lint/index.js';
import type { Logger } from '../log/index.js';
import { NO_TRACING, type ClinkMetrics, type Tracer } from '../metrics/index.js';
import { FrameBudget, listenOn, PeerRejections, type FrameConnection, type TlsServerConfig } from '../net/index.js';
import type { Message, MessageOf } from '../protocol/index.js';
import { systemClock, type Clock } from '../util/index.js';
import { AdmissionLogLimiter } from './admission.js';
import { PeerChecks } from './peer-checks.js';
import { AdmissionGate } from './admission-gate.js';
import type { CompletedCheckpoint } from './checkpoint-ports.js';
import { ClientFront } from './client-front.js';
import { type ClientSession, ClientSessions } from './client-sessions.js';
import { DEFAULT_COORDINATOR_CONFIG, type CoordinatorConfig } from './config.js';
import type { CachedModule, JobState, JobView, WorkerSession, WorkerView } from './job-state.js';
import type { HaJobStore } from '../ha/index.js';
import type { JobDetail } from './job-book.js';
import { Jobs } from './jobs.js';
import { WorkerRegistry, type DepartedSession, type WorkerEvents } from './worker-registry.js';
import type { RescaleOutcome, RescaleRequest } from './rescaler.js';

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

export class Coordinator implements WorkerEvents {
  readonly config: CoordinatorConfig;
  private server!: Server;
  private readonly registry: WorkerRegistry;
  private readonly clients: ClientSessions;
  private readonly clientFront: ClientFront;
  /** Connections being admitted (accept to first frame), with how far each has got. */
  private readonly admission: AdmissionGate;
  /** Running jobs (each with its JobMaster) and ended ones. */
  private readonly jobs: Jobs;
  private readonly log: Logger;
  private readonly watchdogLog: Logger;
  /** Refusals and evictions before admission: rate-limited, since a flood makes many (the counters are exact). */
  private readonly admissionLog: AdmissionLogLimiter;
  private readonly rejections: PeerRejections;
  private readonly peerChecks: PeerChecks;
  private stopWatchdog: (() => void) | undefined;
  private readonly clock: Clock;
  private lastSweep = 0;
  private stopping = false;
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
    this.lastSweep = clock.now();
    const log = (this.log = deps.log.child({ component: 'coordinator' }));
    this.watchdogLog = deps.log.child({ component: 'coordinator.watchdog' });
    const admissionLogger = deps.log.child({ component: 'coordinator.admission' });
    this.admissionLog = new AdmissionLogLimiter(admissionLogger);
    this.peerChecks = new PeerChecks(metrics, log, this.admissionLog, deps.authToken);
    this.rejections = new PeerRejections('coordinator', admissionLogger, metrics, clock);
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
    const { admissionLog, watchdogLog, config: cfg } = this;
    this.registry = new WorkerRegistry({ config: cfg, clock, log, watchdogLog, admissionLog, metrics, events: this });
    const sessionLimits = {
      maxSessions: cfg.maxClientSessions,
      idleTimeoutMs: cfg.clientIdleTimeoutMs,
      maxOutboundBytes: cfg.maxClientOutboundBytes,
    };
    this.clients = new ClientSessions(sessionLimits, log, metrics, () => clock.now());
    const tracer = deps.tracer ?? NO_TRACING;
    this.jobs = new Jobs({
      config: cfg,
      clock,
      log,
      metrics,
      tracer,
      workers: this.registry,
      clients: this.clients,
      ...(deps.jobStore ? { jobStore: deps.jobStore } : {}),
    });
    this.clientFront = new ClientFront(this.clients, this.jobs, (line) => this.admissionLog.warn(line));
  }

  static async start(config: Partial<CoordinatorConfig>, deps: CoordinatorDeps): Promise<Coordinator> {
    const c = new Coordinator(config, deps);
    ({ server: c.server, port: c.port } = await listenOn(
      c.config.bindHost,
      c.config.port,
      { port: '--port', host: '--bind-host' },
      (s) => c.admission.admit(s),
    ));
    // Listening, an accept can still fail (out of descriptors): say so, never crash on it.
    c.server.on('error', (err: NodeJS.ErrnoException) => {
      deps.metrics.handshakeFailures.inc();
      c.admissionLog.warn(
        `accepting a connection failed: ${err.code ?? err.message}${err.code === 'EMFILE' || err.code === 'ENFILE' ? ' (out of file descriptors: raise ulimit -n, or lower --max-pending-connections)' : ''}`,
      );
    });
    c.stopWatchdog = c.clock.every(c.config.watchdogIntervalMs, () => c.sweep());
    deps.metrics.gauge('clink_coordinator_jobs_running', 'Jobs deploying or running', () => c.jobs.size);
    c.log.info(
      { port: c.port, bindHost: c.config.bindHost },
      `coordinator listening on ${c.config.bindHost}:${c.port}`,
    );
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
    } else {
      this.deps.metrics.malformedFrames.inc({ role: 'coordinator' });
      this.log.warn(
        { peer: conn.peer },
        `connection from ${conn.peer} opened with ${first.type}; expected Register or HelloClient`,
      );
      conn.close();
    }
  }

  // ---------------------------------------------------------------- worker sessions (WorkerEvents)

  registered(): void {
    this.jobs.capacityChanged();
  }

  progress(s: WorkerSession, m: MessageOf<'Heartbeat'>): void {
    this.jobs.onProgress(s, m);
  }

  frame(s: WorkerSession, m: Message): void {
    // Frames of a session declared lost or retired are dropped; a retiring one's are facts still.
    if (s.state !== 'active' && s.state !== 'retiring') return;
    switch (m.type) {
      case 'SubtaskListening':
      case 'SubtaskFinished':
      case 'SubtaskCheckpointed':
      case 'CheckpointCommitted':
      case 'RequestFinalCheckpoint':
      case 'BeginRescaleAck':
        return this.jobs.onFrame(s, m);
      default:
        this.log.debug({ workerId: s.id, type: m.type }, `ignoring ${m.type} from worker ${s.id}`);
    }
  }

  /** A worker session is gone (lost, or its retirement done): its unfinished subtasks fail with `error`, and each job heals or fails. */
  gone(s: WorkerSession, error: string): void {
    this.jobs.onSessionGone(s, error);
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
      this.watchdogLog.warn(
        `watchdog sweep came ${gap} ms after the last; judging nothing and restarting every worker's clocks`,
      );
      this.registry.restartClocks(now);
      return;
    }
    this.jobs.tick(now);
    this.clients.sweep(now, (c) => this.jobs.hasClient(c));
    this.registry.judge(now);
  }

  // ---------------------------------------------------------------- jobs (see Jobs)

  submit(m: MessageOf<'SubmitJob'>, client?: ClientSession): Promise<JobState> {
    return this.jobs.submit(m, client);
  }

  submitFromOutside(m: MessageOf<'SubmitJob'>): Promise<JobState> {
    return this.jobs.submitFromOutside(m);
  }

  cachedModule(sha256: string): CachedModule | undefined {
    return this.jobs.cachedModule(sha256);
  }

  cancel(jobId: string, reason = 'cancelled'): { ok: boolean; message: string } {
    return this.jobs.cancel(jobId, reason);
  }

  savepoint(jobId: string, dir: string, cancelAfter: boolean): Promise<{ ok: boolean; message: string; path: string }> {
    return this.jobs.savepoint(jobId, dir, cancelAfter);
  }

  rescale(jobId: string, request: RescaleRequest, cause: string): Promise<RescaleOutcome> {
    return this.jobs.rescale(jobId, request, cause);
  }

  checkpointsOf(jobId: string): readonly CompletedCheckpoint[] | undefined {
    return this.jobs.checkpointsOf(jobId);
  }

  listJobs(includeCompleted = true): JobView[] {
    return this.jobs.listJobs(includeCompleted);
  }

  job(jobId: string): JobDetail | undefined {
    return this.jobs.job(jobId);
  }

  /** HA: take over the jobs the previous leader persisted. Called once the control port listens, so the workers can register meanwhile. */
  takeOver(): Promise<void> {
    return this.jobs.takeOver();
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
    this.jobs.stop();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.admission.closeAll();
    await this.registry.flushAndClose(this.config.outboundFlushTimeoutMs);
    this.clients.closeAll();
    await closed;
    this.rejections.close();
    this.log.info('coordinator stopped');
  }
}
