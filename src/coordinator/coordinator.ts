/**
 * The Coordinator: admits connections, keeps worker sessions alive or declares them lost, places and
 * deploys jobs, resolves data-plane peers, and reports completion to clients.
 *
 * Everything runs on the event loop. Each connection is admitted on its own async path under a
 * deadline; each worker session reads on its own loop, answers heartbeats on the spot and hands every
 * other frame to a FIFO dispatch chain; everything sent to a worker goes through its Outbox, so no
 * worker can hold the coordinator up. A watchdog sweep declares workers lost on silence, stall or
 * overflow.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { ClinkError, listenError } from '../errors.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { checkSdkCompatibility } from '../loader/index.js';
import { writeFrame, type FrameConnection } from '../net/index.js';
import { createPhysicalPlan, failoverRegions, KeyGroupRange, networkEdges, subtaskKey, type JobGraphSpec } from '../plan/index.js';
import {
  checkProtocolCompatibility,
  decodeCollected,
  encodeCollected,
  FrameDecodeError,
  LOCAL_PROTOCOL,
  makeMessage,
  MessageKind,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import { COORDINATOR_HISTORY_CAP, DEFAULT_COORDINATOR_CONFIG, MAX_JOB_COLLECTED_BYTES, type CoordinatorConfig } from './config.js';
import { assignTaskPlacement, NotEnoughSlotsError, placementSubtasks, slotNeed, slotOf, type PlacementSubtask } from './placement.js';
import { AdmissionLogLimiter } from './admission.js';
import { CLIENT_DISPATCH_BACKLOG_FRAMES, type ClientSession, ClientSessions } from './client-sessions.js';
import {
  checkCheckpointConfig,
  claimCheckpointId,
  type CompletedMarker,
  jobDir,
  removeCheckpointState,
  resolveRestore,
  retainCheckpoints,
  writeCompletedMarker,
  writeRestoredRecord,
} from './checkpoints.js';
import { checkRestore } from './restore-gate.js';
import { isTerminal, transition } from './job-lifecycle.js';
import { firstLine, type Failure, type FailureDecision } from './failure-handler.js';
import { countChannels, jobView, toSummary, workerView } from './job-views.js';
import { ModuleCache } from './module-cache.js';
import { AdmissionGate } from './admission-gate.js';
import { JobRecovery } from './job-recovery.js';
import { WorkerRegistry } from './worker-registry.js';
import { CheckpointCoordinator } from './checkpoint-coordinator.js';
import { freeSlots, releaseSlot, type JobState, type JobView, type SubtaskState, type WorkerSession, type WorkerView } from './job-state.js';
import { systemClock, type Clock } from '../util/index.js';




export interface CoordinatorDeps {
  log: Logger;
  metrics: ClinkMetrics;
  /** Time and timers. @default systemClock */
  clock?: Clock;
}

export class Coordinator {
  readonly config: CoordinatorConfig;
  private readonly server: Server;
  private readonly registry: WorkerRegistry;
  private readonly clients: ClientSessions;
  /** Connections being admitted (accept to first frame), with how far each has got. */
  private readonly admission: AdmissionGate;
  private readonly jobs = new Map<string, JobState>();
  private readonly history: JobState[] = [];
  private readonly log: Logger;
  private readonly watchdogLog: Logger;
  /** Refusals and evictions before admission: rate-limited, since a flood makes many (the counters are exact). */
  private readonly admissionLog: AdmissionLogLimiter;
  /** When a worker last registered (a restart waiting for slots starts its clock again then). */
  private stopWatchdog: (() => void) | undefined;
  private readonly clock: Clock;
  private lastSweep = 0;
  private stopping = false;
  /** Sessions retired (lost or replaced) whose connections may still be closing. */
  private readonly modules: ModuleCache;
  private readonly checkpoints: CheckpointCoordinator;
  private readonly recovery: JobRecovery;
  /** Waits (restart backoffs) that stop() cuts short. */
  private readonly stopWaiters = new Set<() => void>();
  /** Placements waiting for slots (see capacityChangeOrTimeout). */
  private readonly capacityWaiters = new Set<() => void>();
  port = 0;

  private constructor(
    config: Partial<CoordinatorConfig>,
    private readonly deps: CoordinatorDeps,
  ) {
    this.config = Object.freeze({ ...DEFAULT_COORDINATOR_CONFIG, ...config });
    this.clock = deps.clock ?? systemClock;
    this.lastSweep = this.clock.now();
    this.log = deps.log.child({ component: 'coordinator' });
    this.watchdogLog = deps.log.child({ component: 'coordinator.watchdog' });
    this.admissionLog = new AdmissionLogLimiter(deps.log.child({ component: 'coordinator.admission' }));
    this.admission = new AdmissionGate(this.config, {
      clock: this.clock,
      log: this.log,
      metrics: deps.metrics,
      admissionLog: this.admissionLog,
      stopping: () => this.stopping,
      route: (conn, first, admissionId) => this.route(conn, first, admissionId),
    });
    this.server = createServer((s) => this.admission.admit(s));
    this.registry = new WorkerRegistry({
      config: this.config,
      clock: this.clock,
      log: this.log,
      watchdogLog: this.watchdogLog,
      metrics: deps.metrics,
      onRegistered: () => this.capacityChanged(),
      onProgress: (s, jobs) => {
        for (const p of jobs) this.jobs.get(p.jobId)?.progress.set(s.id, { sourceRecords: p.sourceRecords, sinkRecords: p.sinkRecords });
      },
      dispatch: (s, m) => this.dispatchWorker(s, m),
      onGone: (s, error) => this.onSessionGone(s, error),
    });
    this.modules = new ModuleCache(deps.metrics);
    this.checkpoints = new CheckpointCoordinator({
      clock: this.clock,
      storage: { claimId: claimCheckpointId, writeMarker: writeCompletedMarker, retain: retainCheckpoints, removeState: removeCheckpointState },
      postToJob: (job, m) => this.postToJob(job, m),
      failJob: (job, reason) => this.failJob(job, reason),
      maybeComplete: (job) => this.maybeComplete(job),
      cancel: (jobId, reason) => void this.cancel(jobId, reason),
      log: this.log,
      metrics: deps.metrics,
      restartBudgetResetAfterMs: this.config.restartBudgetResetAfterMs,
    });
    this.recovery = new JobRecovery({
      config: this.config,
      clock: this.clock,
      log: this.log,
      metrics: deps.metrics,
      checkpoints: this.checkpoints,
      stopping: () => this.stopping,
      capacityChanged: () => this.capacityChanged(),
      post: (s, m) => this.registry.post(s, m),
      postToJob: (job, m) => this.postToJob(job, m),
      failJob: (job, reason) => this.failJob(job, reason),
      finishSubtask: (job, st, error) => this.finishSubtask(job, st, error),
      maybeComplete: (job) => this.maybeComplete(job),
      wait: (ms) => this.wait(ms),
      recordRestore: (dir, jobId, restore) => this.recordRestore(dir, jobId, restore),
      placeWithin: (jobId, subtasks, waitMs, giveUp, clock, detail) => this.placeWithin(jobId, subtasks, waitMs, giveUp, clock, detail),
      deployAttempt: (job, placement, restore) => this.deployAttempt(job, placement, restore),
    });
    this.clients = new ClientSessions(
      { maxSessions: this.config.maxClientSessions, idleTimeoutMs: this.config.clientIdleTimeoutMs, maxOutboundBytes: this.config.maxClientOutboundBytes },
      this.log,
      deps.metrics,
      () => this.clock.now(),
    );
  }

  static async start(config: Partial<CoordinatorConfig>, deps: CoordinatorDeps): Promise<Coordinator> {
    const c = new Coordinator(config, deps);
    await new Promise<void>((resolve, reject) => {
      c.server.once('error', (err) => reject(listenError(err, c.config.bindHost, c.config.port, { port: '--port', host: '--bind-host' })));
      c.server.listen(c.config.port, c.config.bindHost, () => resolve());
    });
    c.port = (c.server.address() as { port: number }).port;
    c.stopWatchdog = c.clock.every(c.config.watchdogIntervalMs, () => c.sweep());
    const active = (): WorkerSession[] => c.registry.active();
    deps.metrics.gauge('clink_coordinator_workers_registered', 'Workers with a live session', () => active().length);
    deps.metrics.gauge('clink_coordinator_slots_total', 'Slots of all registered workers', () => active().reduce((n, s) => n + s.slots, 0));
    deps.metrics.gauge('clink_coordinator_slots_free', 'Free slots of all registered workers', () => active().reduce((n, s) => n + freeSlots(s), 0));
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
    if (first.type === 'Register') await this.registry.register(conn, first, admissionId, this.protocolRefusal(first, `worker ${first.workerId}`));
    else if (first.type === 'HelloClient') await this.helloClient(conn, first);
    else {
      this.deps.metrics.malformedFrames.inc({ role: 'coordinator' });
      this.log.warn({ peer: conn.peer }, `connection from ${conn.peer} opened with ${first.type}; expected Register or HelloClient`);
      conn.close();
    }
  }

  private protocolRefusal(remote: { protocolVersion: number; minCompatibleProtocolVersion: number }, who: string): string | undefined {
    const c = checkProtocolCompatibility(LOCAL_PROTOCOL, { version: remote.protocolVersion, minCompatible: remote.minCompatibleProtocolVersion }, { local: 'the coordinator', remote: who });
    if (c.ok) return undefined;
    this.deps.metrics.protocolMismatches.inc();
    this.log.warn(c.message);
    return c.message;
  }

  private async helloClient(conn: FrameConnection, m: MessageOf<'HelloClient'>): Promise<void> {
    const refusal = this.protocolRefusal(m, `client ${m.clientName}`);
    if (refusal) {
      await writeFrame(
        conn.socket,
        makeMessage('SubmitJobAck', {
          ok: false,
          jobId: '',
          message: refusal,
          protocolVersion: LOCAL_PROTOCOL.version,
          minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
        }),
      ).catch(() => undefined);
      conn.close();
      return;
    }
    const client = this.clients.open(conn, m.clientName, (c) => {
      for (const j of this.jobs.values()) if (j.client === c) delete j.client;
    });
    if (typeof client === 'string') {
      this.admissionLog.warn(`client ${m.clientName} (${conn.peer}) refused: ${client}`);
      await writeFrame(conn.socket, makeMessage('SubmitJobAck', { ok: false, jobId: '', message: client, protocolVersion: LOCAL_PROTOCOL.version, minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible })).catch(() => undefined);
      conn.close();
      return;
    }
    conn.limitBacklog(CLIENT_DISPATCH_BACKLOG_FRAMES);
    conn.start({
      onMessage: (msg) => {
        this.clients.touch(client);
        return this.dispatchClient(client, msg);
      },
    });
  }

  // ---------------------------------------------------------------- frames to workers

  // ---------------------------------------------------------------- worker frames

  private dispatchWorker(s: WorkerSession, m: Message): void {
    // Frames of a session declared lost or retired are dropped; a retiring one's are facts still.
    if (s.state !== 'active' && s.state !== 'retiring') return;
    switch (m.type) {
      case 'SubtaskListening':
        return this.onSubtaskListening(s, m);
      case 'SubtaskFinished':
        return this.onSubtaskFinished(s, m);
      case 'SubtaskCheckpointed':
        return this.onSubtaskCheckpointed(m);
      case 'RequestFinalCheckpoint':
        return this.onRequestFinalCheckpoint(s, m);
      default:
        this.log.debug({ workerId: s.id, type: m.type }, `ignoring ${m.type} from worker ${s.id}`);
    }
  }

  private subtaskOf(job: JobState, taskId: string, index: number, s: WorkerSession): SubtaskState | undefined {
    return job.subtasks.find((t) => t.taskId === taskId && t.index === index && t.session === s);
  }

  private onSubtaskListening(s: WorkerSession, m: MessageOf<'SubtaskListening'>): void {
    const job = this.jobs.get(m.jobId);
    const st = job && this.subtaskOf(job, m.taskId, m.subtaskIndex, s);
    if (!job || !st || st.started || (job.state !== 'DEPLOYING' && job.state !== 'RUNNING')) return;
    st.listening = m.edgePorts;
    // Every subtask of one deploy attempt (the whole job, or a retried region) starts together.
    const group = job.subtasks.filter((t) => t.attempt === st.attempt);
    if (group.every((t) => t.listening)) this.sendPeerUpdates(job, group, st.attempt);
  }

  /** Every subtask of an attempt has reported its ports: tell each worker where they send their output. */
  private sendPeerUpdates(job: JobState, group: SubtaskState[], attempt: number): void {
    const edges = networkEdges(job.plan);
    const find = (taskId: string, index: number): SubtaskState => job.subtasks.find((t) => t.taskId === taskId && t.index === index)!;
    const bySession = new Map<WorkerSession, MessageOf<'PeerUpdate'>['subtasks']>();
    for (const st of group) {
      st.started = true;
      const peers: MessageOf<'PeerUpdate'>['subtasks'][number]['peers'] = [];
      for (const { edge, up, down } of edges) {
        if (up.id !== st.taskId) continue;
        for (let d = 0; d < down.parallelism; d++) {
          const target = find(down.id, d);
          const port = target.listening!.find((p) => p.upstreamTaskId === up.id && p.upstreamSubtask === st.index && p.inputIndex === edge.inputIndex)?.port;
          if (port === undefined) continue;
          peers.push({ downstreamTaskId: down.id, downstreamSubtask: d, inputIndex: edge.inputIndex, host: target.session.dataHost, port });
        }
      }
      (bySession.get(st.session) ?? bySession.set(st.session, []).get(st.session)!).push({ taskId: st.taskId, subtaskIndex: st.index, peers });
    }
    for (const [s, subtasks] of bySession) this.registry.post(s, makeMessage('PeerUpdate', { jobId: job.id, subtasks, attempt }));
    if (job.state === 'RUNNING') {
      this.log.info({ jobId: job.id, attempt }, `job ${job.id} (${job.name}): ${group.length} retried subtasks running again as attempt ${attempt}`);
      return;
    }
    job.state = transition(job.state, 'RUNNING', `job ${job.id}`);
    job.runningAt = this.clock.now();
    this.log.info({ jobId: job.id }, `job ${job.id} (${job.name}) running: ${job.subtasks.length} subtasks on ${bySession.size} workers`);
  }

  private onSubtaskFinished(s: WorkerSession, m: MessageOf<'SubtaskFinished'>): void {
    const job = this.jobs.get(m.jobId);
    const st = job && this.subtaskOf(job, m.taskId, m.subtaskIndex, s);
    if (!job || !st || st.finished) return;
    this.finishSubtask(job, st, m.ok ? undefined : m.error || 'failed');
    if (job.state === 'RESTARTING') {
      // A survivor drained: what it did belongs to the abandoned attempt.
      this.maybeRedeploy(job);
      return;
    }
    const key = subtaskKey(st.taskId, st.index);
    const region = job.regionOf.get(key)!;
    if (job.retrying.has(region)) {
      // Its region is being retried: what it did belongs to the abandoned attempt.
      this.recovery.maybeRetryRegion(job, region);
      return;
    }
    st.recordsIn = m.recordsIn;
    st.recordsOut = m.recordsOut;
    if (m.collected.length > 0) this.addCollected(job, st, m.collected);
    if (!m.ok && m.peerLost) {
      // A consequence of another worker's loss or of a failure in its region, most likely: wait for the cause.
      job.peerFailure ??= { error: m.error, at: this.clock.now(), subtask: key };
    } else if (!m.ok && job.state !== 'CANCELED') {
      // A failure that is not deterministic (fatal: the deploy itself failed) heals like a worker loss:
      // from the last checkpoint, or by retrying the subtask's region in a job without one.
      const error = m.error || `subtask ${key} failed`;
      this.handleFailure(job, { error, subtask: key, restartCause: `subtask ${key} failed on worker ${s.id}: ${firstLine(error)}`, fatal: m.fatal }, st);
    }
    this.maybeComplete(job);
  }

  // ---------------------------------------------------------------- checkpoints

  /**
   * Take a savepoint into `dir` (see CheckpointCoordinator.savepoint). Resolves once its marker is
   * durable; with `cancelAfter` the job is then cancelled.
   */
  async savepoint(jobId: string, dir: string, cancelAfter: boolean): Promise<{ ok: boolean; message: string; path: string }> {
    const job = this.jobs.get(jobId);
    if (!job) return { ok: false, message: `no running job ${jobId}`, path: '' };
    return this.checkpoints.savepoint(job, dir, cancelAfter);
  }

  private onRequestFinalCheckpoint(s: WorkerSession, m: MessageOf<'RequestFinalCheckpoint'>): void {
    const job = this.jobs.get(m.jobId);
    if (!job || !this.subtaskOf(job, m.taskId, m.subtaskIndex, s)) return;
    this.checkpoints.onFinalRequested(job, m.taskId, m.subtaskIndex);
  }

  private onSubtaskCheckpointed(m: MessageOf<'SubtaskCheckpointed'>): void {
    const job = this.jobs.get(m.jobId);
    if (job) this.checkpoints.onAck(job, m);
  }

  /** Post `m` once to each live session that runs an unfinished subtask of `job`. */
  private postToJob(job: JobState, m: Message): void {
    for (const s of new Set(job.subtasks.filter((t) => !t.finished && t.session.state === 'active').map((t) => t.session))) this.registry.post(s, m);
  }

  /** Completed checkpoints of a job (newest last). */
  checkpointsOf(jobId: string): JobState['checkpoints'] | undefined {
    return (this.jobs.get(jobId) ?? this.history.find((h) => h.id === jobId))?.checkpoints;
  }

  /** A subtask's collect() results are kept apart until the job completes, since a retry may replace them. */
  private addCollected(job: JobState, st: SubtaskState, bytes: Uint8Array): void {
    job.collectedBytes += bytes.length;
    if (job.collectedBytes > MAX_JOB_COLLECTED_BYTES) {
      this.failJob(job, `collect() results exceed ${MAX_JOB_COLLECTED_BYTES} bytes; write large results to a sink`);
      return;
    }
    st.collected = bytes;
  }

  /** Every subtask's collect() results, merged in plan order. */
  private collectedOf(job: JobState): Record<string, unknown[]> {
    const out: Record<string, unknown[]> = {};
    for (const st of job.subtasks) {
      if (!st.collected) continue;
      for (const [name, values] of Object.entries(decodeCollected(st.collected))) {
        const arr = (out[name] ??= []);
        for (const v of values) arr.push(v);
      }
    }
    return out;
  }

  private finishSubtask(job: JobState, st: SubtaskState, error: string | undefined): void {
    st.finished = true;
    if (error) st.error = error;
    releaseSlot(st.session, `${job.id}/${st.slot}`);
    this.capacityChanged();
  }

  /** The job fails (or is cancelled): every subtask still running is told to stop. */
  private failJob(job: JobState, error: string, state: 'FAILED' | 'CANCELED' = 'FAILED'): void {
    if (isTerminal(job.state)) return;
    job.state = transition(job.state, state, `job ${job.id}`);
    job.error = error;
    job.retrying.clear();
    this.postToJob(job, makeMessage('CancelJob', { jobId: job.id, reason: error }));
    this.log.warn({ jobId: job.id, state }, `job ${job.id} (${job.name}) ${state === 'CANCELED' ? 'cancelled' : 'failed'}: ${error}`);
    // A restart or retry of this job waiting for slots gives up now.
    this.capacityChanged();
  }

  private maybeComplete(job: JobState): void {
    if (job.finishedAt !== undefined || job.state === 'RESTARTING' || job.retrying.size > 0 || !job.subtasks.every((t) => t.finished)) return;
    // A subtask may finish before its ack of the final checkpoint arrives: the job ends with its marker.
    if (job.state === 'RUNNING' && (job.pendingCheckpoint?.final || (job.startingCheckpoint && this.checkpoints.finalWanted(job)))) return;
    if (job.state === 'DEPLOYING' || job.state === 'RUNNING') job.state = transition(job.state, 'FINISHED', `job ${job.id}`);
    job.finishedAt = this.clock.now();
    this.deps.metrics.jobsEnded.inc({ state: job.state });
    this.jobs.delete(job.id);
    this.history.push(job);
    if (this.history.length > COORDINATOR_HISTORY_CAP) this.history.shift();
    this.log.info({ jobId: job.id, state: job.state }, `job ${job.id} (${job.name}) ${job.state.toLowerCase()} in ${job.finishedAt - job.startedAt} ms`);
    if (job.client) {
      const collected = this.collectedOf(job);
      void this.clients.send(
        job.client,
        makeMessage('JobCompleted', {
          jobId: job.id,
          ok: job.state === 'FINISHED',
          error: job.error ?? '',
          state: job.state,
          durationMs: job.finishedAt - job.startedAt,
          collected: Object.keys(collected).length > 0 ? encodeCollected(collected) : new Uint8Array(0),
        }),
      );
    }
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
    for (const job of [...this.jobs.values()]) {
      if (job.state === 'RESTARTING') this.recovery.checkDrain(job, now);
      else if (job.retrying.size > 0) this.recovery.checkRetryDrain(job, now);
      if (job.peerFailure && job.state === 'RUNNING' && now - job.peerFailure.at > hb + interval) {
        // A peer connection broke and no worker was declared lost: heal it the same way.
        const { error, subtask } = job.peerFailure;
        const st = job.subtasks.find((t) => subtaskKey(t.taskId, t.index) === subtask);
        this.handleFailure(job, { error, ...(st ? { subtask } : {}) }, st);
        this.maybeComplete(job);
      }
    }
    this.checkpoints.tick(this.jobs.values());
    this.clients.sweep(now, (c) => [...this.jobs.values()].some((j) => j.client === c));
    this.registry.judge(now);
  }

  /** A worker session is gone (lost, or its retirement done): its unfinished subtasks fail with `error`, and each job heals or fails. */
  private onSessionGone(s: WorkerSession, error: string): void {
    for (const job of [...this.jobs.values()]) {
      const mine = job.subtasks.filter((t) => t.session === s && !t.finished);
      if (mine.length === 0) continue;
      for (const st of mine) this.finishSubtask(job, st, error);
      // Lost while draining for a restart: those subtasks are gone either way; the restart goes on.
      if (job.state === 'RESTARTING') this.maybeRedeploy(job);
      else if (this.handleFailure(job, { error }) === 'fail') this.maybeComplete(job);
    }
  }


  // ---------------------------------------------------------------- clients

  private async dispatchClient(c: ClientSession, m: Message): Promise<void> {
    // Each reply waits for the client to read (see ClientSessions.send) before the next request is handled.
    const reply = async (r: Message): Promise<void> => void (await this.clients.send(c, r));
    switch (m.type) {
      case 'SubmitJob':
        return this.onSubmit(c, m);
      case 'ListJobs':
        return reply(makeMessage('ListJobsReply', { jobs: this.listJobs(m.includeCompleted).map(toSummary) }));
      case 'CancelJob': {
        const r = this.cancel(m.jobId, m.reason || `cancelled by client ${c.name}`);
        return reply(makeMessage('ClientReply', { requestKind: MessageKind.CancelJob, ok: r.ok, jobId: m.jobId, message: r.message }));
      }
      case 'Savepoint': {
        const r = await this.savepoint(m.jobId, m.targetDir, m.cancelAfter);
        return reply(makeMessage('ClientReply', { requestKind: MessageKind.Savepoint, ok: r.ok, jobId: m.jobId, message: r.message, savepointPath: r.path }));
      }
      case 'RescaleJob':
      case 'RescaleOperator':
        return reply(makeMessage('ClientReply', { requestKind: MessageKind[m.type], ok: false, jobId: m.jobId, message: `${m.type} is not supported by this coordinator yet` }));
      default:
        throw new FrameDecodeError(`a client may not send ${m.type}`);
    }
  }

  private async onSubmit(c: ClientSession, m: MessageOf<'SubmitJob'>): Promise<void> {
    const ack = (ok: boolean, jobId: string, message: string, missingModuleHashes: string[] = []): void =>
      void this.clients.send(
        c,
        makeMessage('SubmitJobAck', {
          ok,
          jobId,
          message,
          missingModuleHashes,
          protocolVersion: LOCAL_PROTOCOL.version,
          minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
        }),
      );
    try {
      // The SDK gate runs on the advert, before any reference is resolved or byte requested.
      let theirs: Record<string, string> = {};
      try {
        theirs = JSON.parse(m.sdkManifest) as Record<string, string>;
      } catch {
        /* an unreadable manifest only costs the refusal its file names */
      }
      checkSdkCompatibility({ fingerprint: m.sdkFingerprint, version: m.sdkVersion || 'unknown' }, `submit of ${m.jobName}`, theirs);
      const missing = this.resolveModules(m);
      if (missing.length > 0) {
        ack(false, '', `upload the job module: this coordinator does not hold ${missing.join(', ')}`, missing);
        return;
      }
      const job = await this.submit(m, c);
      ack(true, job.id, `job ${job.id} submitted`);
    } catch (err) {
      ack(false, '', (err as Error).message);
    }
  }

  /** Store modules that came with bytes; return the hashes referred to but not held. */
  private resolveModules(m: MessageOf<'SubmitJob'>): string[] {
    return this.modules.resolve(m.modules, () => new Set([...this.jobs.values()].map((j) => j.module.sha256)));
  }

  /** Plan, place and deploy a job. Throws NotEnoughSlotsError (after submitWaitForSlotsMs) or a plan error. */
  async submit(m: MessageOf<'SubmitJob'>, client?: ClientSession): Promise<JobState> {
    if (this.stopping) throw new ClinkError('CLINK_ERR_CANCELLED', 'the coordinator is stopping');
    checkCheckpointConfig(m.checkpoint);
    const spec = JSON.parse(m.specJson) as JobGraphSpec;
    const plan = createPhysicalPlan(spec);
    const module = m.modules[0] && this.modules.get(m.modules[0].sha256);
    if (!module) throw new ClinkError('CLINK_ERR_MODULE_MISSING', `SubmitJob refers to job module ${m.modules[0]?.sha256 ?? '(none)'}, which this coordinator does not hold`);
    const subtasks = placementSubtasks(plan, this.config.slotSharing);
    const jobName = m.jobName || spec.job.name;
    // The restore gate (identity and layout) runs before any slot is waited for.
    const point = m.checkpoint.restoreFromDir ? await resolveRestore(m.checkpoint.restoreFromDir, m.checkpoint.restoreFromCheckpointId) : undefined;
    const restore = point?.marker;
    if (point) this.recovery.logSkipped(`the restore of ${jobName}`, point);
    if (restore) checkRestore(restore, plan, jobName, m.checkpoint.allowNonRestoredState);
    const id = randomUUID().slice(0, 8);
    if (restore && m.checkpoint.checkpointDir) await this.recordRestore(m.checkpoint.checkpointDir, id, restore);
    // From the placement to the deploy nothing awaits: the slots it found are still free when charged,
    // and every worker it names is still registered.
    const placement = await this.placeWithin(id, subtasks, this.config.submitWaitForSlotsMs, undefined, false, slotNeed(plan, this.config.slotSharing).detail);
    const regions = failoverRegions(plan);
    const job: JobState = {
      id,
      name: jobName,
      spec,
      plan,
      specJson: m.specJson,
      module,
      params: m.params,
      buildParallelism: m.buildParallelism,
      state: 'DEPLOYING',
      startedAt: this.clock.now(),
      subtasks: [],
      ...(client ? { client } : {}),
      collectedBytes: 0,
      progress: new Map(),
      edges: countChannels(plan, placement),
      checkpoint: m.checkpoint,
      checkpointFloor: restore?.checkpointId ?? 0,
      ...(restore ? { submittedRestore: restore } : {}),
      lastCheckpointAt: this.clock.now(),
      attempt: 0,
      restarts: [],
      restartsSpent: 0,
      checkpoints: [],
      regions,
      regionOf: new Map(regions.flatMap((keys, i) => keys.map((k) => [k, i] as const))),
      retriesBySubtask: new Map(),
      retrying: new Map(),
      retries: [],
    };
    this.jobs.set(job.id, job);
    this.deps.metrics.jobsSubmitted.inc();
    this.deployAttempt(job, placement, restore);
    this.log.info(
      { jobId: job.id, subtasks: subtasks.length, workers: placement.size, edges: job.edges },
      `job ${job.id} placed: edges local=${job.edges.local} socket=${job.edges.socket} (${subtasks.length} subtasks of ${job.name} on ${placement.size} workers)`,
    );
    return job;
  }

  /** A deploy that continues a run writes `RESTORED`: what it restored, and the first id it numbers. */
  private async recordRestore(checkpointDir: string, jobId: string, restore: CompletedMarker): Promise<void> {
    await writeRestoredRecord(jobDir(checkpointDir, jobId), { restoredFrom: restore.stateDir, checkpointId: restore.checkpointId, firstId: restore.checkpointId + 1 });
  }

  /**
   * Charge the placement's slots, record its subtasks (replacing those of an earlier attempt: the whole
   * job, or a retried region), and send each worker its Deploy as attempt `job.attempt`.
   */
  private deployAttempt(job: JobState, placement: ReturnType<typeof assignTaskPlacement>, restore: CompletedMarker | undefined): void {
    const placed = new Set([...placement.values()].flatMap((sts) => sts.map((t) => subtaskKey(t.taskId, t.index))));
    job.subtasks = job.subtasks.filter((t) => {
      if (!placed.has(subtaskKey(t.taskId, t.index))) return true;
      job.collectedBytes -= t.collected?.length ?? 0;
      return false;
    });
    for (const [workerId, sts] of placement) {
      const s = this.registry.sessions.get(workerId)!;
      for (const st of sts) {
        const slot = slotOf(st);
        s.slotShares.set(`${job.id}/${slot}`, (s.slotShares.get(`${job.id}/${slot}`) ?? 0) + 1);
        job.subtasks.push({ taskId: st.taskId, index: st.index, session: s, slot, attempt: job.attempt, finished: false, recordsIn: 0, recordsOut: 0 });
      }
    }
    const order = new Map(job.plan.subtasks.map((s, i) => [subtaskKey(s.taskId, s.index), i]));
    job.subtasks.sort((a, b) => order.get(subtaskKey(a.taskId, a.index))! - order.get(subtaskKey(b.taskId, b.index))!);
    const byWorker = new Map<string, SubtaskState[]>();
    for (const t of job.subtasks) (byWorker.get(t.session.id) ?? byWorker.set(t.session.id, []).get(t.session.id)!).push(t);
    job.edges = countChannels(job.plan, byWorker);
    const restored = restore ? this.logRestore(job, restore) : new Set<string>();
    for (const [workerId, sts] of placement) {
      const s = this.registry.sessions.get(workerId)!;
      const tasks = sts.map((st) => {
        const task = job.plan.tasks.find((t) => t.id === st.taskId)!;
        const range = KeyGroupRange.forSubtask(st.index, task.parallelism, job.spec.maxParallelism);
        return {
          taskId: st.taskId,
          subtaskIndex: st.index,
          parallelism: task.parallelism,
          chainJson: JSON.stringify(task.operators.map((o) => o.id)),
          keyGroupStart: range.start,
          keyGroupEnd: range.end,
          restoreCheckpointId: restore && restored.has(st.taskId) ? restore.checkpointId : 0,
          attempt: job.attempt,
        };
      });
      this.registry.post(
        s,
        makeMessage('Deploy', {
          jobId: job.id,
          jobName: job.name,
          specJson: job.specJson,
          tasks,
          modules: [this.modules.forDeploy(s, job.module)],
          checkpoint: restore ? { ...job.checkpoint, restoreFromDir: restore.stateDir } : job.checkpoint,
          params: job.params,
          buildParallelism: job.buildParallelism,
        }),
        'bulk',
      );
    }
  }

  /** Say what a deploy restores (the gate passed at submit); returns the tasks whose state it loads. */
  private logRestore(job: JobState, restore: CompletedMarker): Set<string> {
    const d = checkRestore(restore, job.plan, job.name, job.checkpoint.allowNonRestoredState);
    const fields = { jobId: job.id, checkpointId: restore.checkpointId, attempt: job.attempt };
    this.log.info(fields, `restored job ${job.id} from ${restore.stateDir} (checkpoint ${restore.checkpointId}, ${d.restoredOperators} operators)`);
    if (d.dropped.length > 0) this.log.warn(fields, `job ${job.id}: the state of operators ${d.dropped.join(', ')} in checkpoint ${restore.checkpointId} is dropped (--allow-non-restored-state): the job no longer has them`);
    if (d.fresh.length > 0) this.log.info(fields, `job ${job.id}: tasks ${d.fresh.join(', ')} have no state in checkpoint ${restore.checkpointId} and start empty`);
    if (d.graphChanged) this.log.info(fields, `job ${job.id}: its graph differs from checkpoint ${restore.checkpointId}'s (hash ${restore.identity?.graphHash.slice(0, 12)} -> ${d.graphHash.slice(0, 12)})`);
    return d.restoredTasks;
  }

  /** Heal a failure as decideFailure says (restart, retry a region, or fail); returns what it did. */
  private handleFailure(job: JobState, failure: Failure, st?: SubtaskState): FailureDecision['action'] {
    return this.recovery.handleFailure(job, failure, st);
  }

  private maybeRedeploy(job: JobState): void {
    this.recovery.maybeRedeploy(job);
  }

  /** Wait `ms` (cut short by stop()). */
  private wait(ms: number): Promise<void> {
    return this.waitUnlessWoken(this.stopWaiters, ms);
  }

  /**
   * Resolves when capacity may have changed (a worker registered, a slot came free), a job ended or
   * failed (a waiter's give-up condition), the coordinator stops, or after `ms`: placement waits on
   * events, not a poll.
   */
  private capacityChangeOrTimeout(ms: number): Promise<void> {
    return this.waitUnlessWoken(this.capacityWaiters, Math.max(1, ms));
  }

  /** Resolves after `ms`, or sooner when a waker in `wakers` is called. */
  private waitUnlessWoken(wakers: Set<() => void>, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        cancel();
        wakers.delete(done);
        resolve();
      };
      const cancel = this.clock.after(ms, done);
      wakers.add(done);
    });
  }

  private capacityChanged(): void {
    for (const w of [...this.capacityWaiters]) w();
  }

  /** `registrationRestartsClock`: a worker registering while this waits gives it `waitMs` again. */
  private async placeWithin(
    jobId: string,
    subtasks: PlacementSubtask[],
    waitMs: number,
    giveUp = (): boolean => false,
    registrationRestartsClock = false,
    detail = '',
  ): Promise<ReturnType<typeof assignTaskPlacement>> {
    const started = this.clock.now();
    const prefix = `${jobId}/`;
    for (;;) {
      const deadline = (registrationRestartsClock ? Math.max(started, this.registry.lastRegistrationAt) : started) + waitMs;
      const active = this.registry.active();
      const total = active.reduce((n, s) => n + s.slots, 0);
      // Slots this job still holds on a worker (survivors of a retried region) take its subtasks for free.
      const holds = (s: WorkerSession): Set<string> => new Set([...s.slotShares.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)));
      try {
        return assignTaskPlacement(subtasks, active.map((s) => ({ id: s.id, freeSlots: freeSlots(s), holds: holds(s) })), total, detail);
      } catch (err) {
        if (!(err instanceof NotEnoughSlotsError) || this.clock.now() >= deadline || this.stopping || giveUp()) throw err;
        await this.capacityChangeOrTimeout(deadline - this.clock.now());
      }
    }
  }

  /** Cancel a running job. Its subtasks stop; it ends CANCELED once they have. */
  cancel(jobId: string, reason = 'cancelled'): { ok: boolean; message: string } {
    const job = this.jobs.get(jobId);
    if (!job) {
      const done = this.history.find((j) => j.id === jobId);
      return { ok: false, message: done ? `job ${jobId} already ended (${done.state})` : `no job ${jobId}` };
    }
    this.failJob(job, reason, 'CANCELED');
    this.maybeComplete(job);
    return { ok: true, message: `job ${jobId} cancelling` };
  }

  // ---------------------------------------------------------------- views

  listJobs(includeCompleted = true): JobView[] {
    const all = [...this.jobs.values(), ...(includeCompleted ? [...this.history].reverse() : [])];
    return all.map((j) => this.view(j));
  }

  job(jobId: string): JobView | undefined {
    const j = this.jobs.get(jobId) ?? this.history.find((h) => h.id === jobId);
    return j && this.view(j);
  }

  private view(j: JobState): JobView {
    return jobView(j, this.clock.now());
  }

  workers(): WorkerView[] {
    const now = this.clock.now();
    return [...this.registry.sessions.values()]
      .filter((s) => s.state === 'active')
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((s) => workerView(s, now));
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
    for (const w of this.stopWaiters) w();
    this.capacityChanged();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.admission.closeAll();
    await this.registry.flushAndClose(this.config.outboundFlushTimeoutMs);
    this.clients.closeAll();
    await closed;
    this.log.info('coordinator stopped');
  }
}

