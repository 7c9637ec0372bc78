/**
 * Worker: one control session with the coordinator. It registers, heartbeats, and runs what it is
 * deployed. Frames from the coordinator are handled one at a time in order (FIFO), so a Deploy that
 * loads a module delays the next frame but never the heartbeat, which runs on its own timer.
 */
import { WORKER_DEFAULTS } from '../config/index.js';
import { ClinkError } from '../errors.js';
import { DataServer, type DataTransport } from '../dataplane/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import {
  connectWithin,
  FrameConnection,
  isTlsFailure,
  noAnswerError,
  writeFrame,
  WrongProtocolError,
  wrongPortMessage,
} from '../net/index.js';
import {
  checkProtocolCompatibility,
  HEARTBEAT_ACK_PROTOCOL_VERSION,
  COMMIT_CONFIRMATION_PROTOCOL_VERSION,
  LOCAL_PROTOCOL,
  makeMessage,
  ProtocolVersionError,
  type Message,
  type MessageOf,
  type SubtaskProgressReport,
} from '../protocol/index.js';
import { JOB_FRAME_TYPES, type JobFrame, type JobHostConfig, type WorkerTls } from './job-host.js';
import { InProcessJob, type JobRunner } from './job-runner.js';
import { JobThread } from './job-thread.js';
import { systemClock, withDefaults, type Clock } from '../util/index.js';
import { localStateRoot, sweepDeadStateDirs } from '../state/index.js';

/** How long a closing session lets a job's subtasks end before their thread is terminated. */
const JOB_CLOSE_GRACE_MS = 5_000;

/** A worker's settings: all but its id have a default (WORKER_DEFAULTS in config/node-defaults.ts). */
export interface WorkerConfig {
  id: string;
  /** @default 127.0.0.1 */
  coordinatorHost?: string;
  /** @default 6123 */
  coordinatorPort?: number;
  /** @default 1 */
  slots?: number;
  /** The host other workers reach this one's data port on. @default 127.0.0.1 */
  dataHost?: string;
  /** @default 500 */
  heartbeatIntervalMs?: number;
  /** @default 30,000 */
  peerUpdateTimeoutMs?: number;
  /** How long connecting and registering may take. @default 5,000 */
  connectTimeoutMs?: number;
  httpPort?: number;
  cacheDir?: string;
  /** Records per batch between tasks. @default 1000 */
  batchSize?: number;
  /** How long a partly filled batch may wait to fill before it is sent. @default 0 */
  batchLingerMs?: number;
  /**
   * Buffer debloating: each task with inputs asks its senders for batches of a size at which what its
   * queue holds is about this many ms of its work, so a checkpoint barrier waits about that long behind
   * them under backpressure (runtime/debloat.ts). 0 turns it off. @default 0
   */
  debloatTargetMs?: number;
  /** Where jobs on the disk state backend keep their stores (--local-state-dir). @default clink-state in the system's temp dir */
  localStateDir?: string;
  /** Decoded values the disk state backend caches per state and subtask (--state-cache-entries). @default 65,536 */
  stateCacheEntries?: number;
  /**
   * With a v2 coordinator: end the session when no frame came from it for this long (it answers each
   * heartbeat), catching partitions that leave the socket writable. 0 turns it off. @default 3,000
   */
  coordinatorHeartbeatTimeoutMs?: number;
  /**
   * Where user code runs: `thread`, a worker thread per job (the session's event loop only forwards
   * frames and heartbeats); `none`, on the session's own event loop. @default 'thread'
   */
  taskIsolation?: TaskIsolation;
  /** A job thread whose event loop makes no progress this long is terminated; its subtasks fail fatally. @default 30,000 */
  taskStallTimeoutMs?: number;
  /** A job thread's heap limit; past it its subtasks fail with "out of memory". @default 2,048 */
  taskHeapMb?: number;
  /**
   * A job thread's V8 young generation, in MB (a third for each of its two semi-spaces, a third for
   * new large objects). Records live briefly: in a larger one more die before a scavenge copies them
   * twice and promotes them to the old generation, which costs marking and compaction later. @default 192
   */
  taskYoungGenerationMb?: number;
  /**
   * How its channels to other workers travel: `link`, every channel to one peer on one connection (a
   * data link), to peers that take links; `channel`, a connection per channel, and it takes no links.
   * @default 'link'
   */
  dataTransport?: DataTransport;
  /** What its connections' partial frames may hold together: a peer past it is cut. @default 256 MiB */
  maxInflightFrameBytes?: number;
}

export type TaskIsolation = 'thread' | 'none';

/** The settings of a WorkerConfig that have a default: what `clink node --role worker` and a worker started without them use. */
export type WorkerSettings = Required<Omit<WorkerConfig, 'id' | 'httpPort' | 'cacheDir'>>;

export const DEFAULT_WORKER_CONFIG: Readonly<WorkerSettings> = WORKER_DEFAULTS;

export interface WorkerDeps {
  log: Logger;
  metrics: ClinkMetrics;
  /** Where print() writes. @default process.stdout */
  stdout?: (text: string) => void | Promise<void>;
  /** Where this session keeps the job modules it received, by hash. @default a Map */
  moduleStore?: Map<string, { bytes: Uint8Array; sourceMap: Uint8Array }>;
  /** The cluster's token (CLINK_AUTH_TOKEN), presented in Register. Not in the config, which the API serves. */
  authToken?: string;
  /**
   * TLS: `client` verifies the coordinator and data peers (and presents this worker's certificate under
   * mTLS); `server` is the data port's certificate, which peers verify.
   */
  tls?: WorkerTls;
  /** Time and timers: heartbeats, the coordinator's silence, the stall watchdog, reconnect backoff. @default systemClock */
  clock?: Clock;
  /** The reconnect backoff's jitter, in [0, 1). @default Math.random */
  random?: () => number;
}

/** Why a worker session ended. */
export type WorkerEnd = { reason: 'closed' } | { reason: 'disconnected'; detail: string };

export class Worker {
  private conn!: FrameConnection;
  private data!: DataServer;
  /** Where each job deployed here runs (and takes frames): a job thread, or an in-process host. */
  private readonly jobs = new Map<string, JobRunner>();
  /** Every runner not yet ended, detached (closing) ones too. */
  private readonly runners = new Set<JobRunner>();
  /** A warm job thread waiting for the next job (task isolation on). */
  private spare: JobThread | undefined;
  private stopStallWatch: (() => void) | undefined;
  // The warm thread too: a data connection refused there is counted in its metrics.
  private readonly metricsSource = (): Promise<object[][]> =>
    Promise.all([...this.runners, ...(this.spare ? [this.spare] : [])].map((j) => j.metrics()));
  /** Job modules this session has received, by hash; the coordinator sends a reference after the first. */
  private readonly modules: Map<string, { bytes: Uint8Array; sourceMap: Uint8Array }>;
  private stopHeartbeat: (() => void) | undefined;
  private lastCoordinatorFrameAt = 0;
  private endedWith: WorkerEnd | undefined;
  private coordinatorSilenceLimitMs = 0;
  /** The coordinator takes CheckpointCommitted (protocol 3 or later). */
  private confirmsCommits = false;
  private seq = 0;
  private closing = false;
  /** The epoch of the coordinator this session registered with (0 = unfenced). */
  epoch = 0;
  session = 0;
  fencedFrames = 0;
  readonly ended: Promise<WorkerEnd>;
  private resolveEnded!: (e: WorkerEnd) => void;
  private readonly log: Logger;
  private readonly clock: Clock;

  /** Its config with every default filled in (what the HTTP API shows). */
  readonly config: WorkerConfig & WorkerSettings;

  private constructor(
    config: WorkerConfig,
    private readonly deps: WorkerDeps,
  ) {
    this.config = withDefaults(DEFAULT_WORKER_CONFIG, config);
    this.log = deps.log.child({ component: 'worker', workerId: config.id });
    this.modules = deps.moduleStore ?? new Map();
    this.clock = deps.clock ?? systemClock;
    this.ended = new Promise((r) => (this.resolveEnded = r));
  }

  /** Start the data listener, connect, register and begin heartbeating. */
  static async start(config: WorkerConfig, deps: WorkerDeps): Promise<Worker> {
    const w = new Worker(config, deps);
    // Disk state a killed worker left under the same local state directory goes now.
    sweepDeadStateDirs(localStateRoot(config.localStateDir));
    w.data = await DataServer.start({
      host: w.config.dataHost,
      log: w.log,
      metrics: deps.metrics,
      ...(deps.tls?.server ? { tls: deps.tls.server } : {}),
      transport: w.config.dataTransport,
      maxInflightFrameBytes: w.config.maxInflightFrameBytes,
    });
    try {
      await w.register();
    } catch (err) {
      await w.data.close();
      throw err;
    }
    return w;
  }

  get dataPort(): number {
    return this.data.port;
  }

  /** The data ports its job threads listen on (each thread has a data server of its own), sorted. */
  get jobDataPorts(): number[] {
    const threads = [...this.runners, ...(this.spare ? [this.spare] : [])].filter(
      (r): r is JobThread => r instanceof JobThread,
    );
    return [...new Set(threads.map((t) => t.dataPort).filter((p) => p > 0))].sort((a, b) => a - b);
  }

  /** Told when the ports in jobDataPorts change (the ready file follows them). */
  onDataPorts: (() => void) | undefined;

  private async register(): Promise<void> {
    const timeoutMs = this.config.connectTimeoutMs;
    const socket = await connectWithin(
      this.config.coordinatorHost,
      this.config.coordinatorPort,
      'the coordinator',
      timeoutMs,
      this.deps.tls?.client,
    );
    this.conn = new FrameConnection(socket, {
      role: 'worker',
      log: this.log,
      metrics: this.deps.metrics,
      readTimeoutMs: timeoutMs,
    });
    await writeFrame(
      socket,
      makeMessage('Register', {
        workerId: this.config.id,
        dataHost: this.config.dataHost,
        slotCount: this.config.slots,
        httpPort: this.config.httpPort ?? 0,
        protocolVersion: LOCAL_PROTOCOL.version,
        minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
        runtime: `node${process.versions.node.split('.')[0]}/abi${process.versions.modules}`,
        authToken: this.deps.authToken ?? '',
      }),
      timeoutMs,
    );
    const { coordinatorHost: host, coordinatorPort: port } = this.config;
    const overTls = this.deps.tls?.client !== undefined;
    const ack = await this.conn.readOne().catch((err: unknown) => {
      socket.destroy();
      if (err instanceof WrongProtocolError)
        throw new WrongProtocolError(
          err.protocol,
          wrongPortMessage(host, port, err.protocol, '--coordinator-host/--coordinator-port'),
        ); // fatal: retrying cannot help
      if (isTlsFailure(err)) throw noAnswerError('the coordinator', host, port, overTls, err as Error);
      throw err;
    });
    if (!ack) {
      socket.destroy();
      throw noAnswerError('the coordinator', host, port, overTls);
    }
    if (ack.type !== 'RegisterAck') {
      socket.destroy();
      throw new ClinkError('CLINK_ERR_MALFORMED_FRAME', `coordinator answered Register with ${ack.type}`);
    }
    const compat = checkProtocolCompatibility(
      LOCAL_PROTOCOL,
      { version: ack.protocolVersion, minCompatible: ack.minCompatibleProtocolVersion },
      { local: `worker ${this.config.id}`, remote: 'the coordinator' },
    );
    if (!compat.ok) {
      socket.destroy();
      throw new ProtocolVersionError(compat.message);
    }
    if (!ack.ok) {
      socket.destroy();
      throw new RegistrationRefusedError(ack.message, ack.retryable);
    }
    // The bound was for the registration; silence after it is the coordinator lease's business.
    this.conn.reader.configure({ readTimeoutMs: undefined });
    this.epoch = ack.epoch;
    this.session = ack.session;
    this.log.info(
      { session: this.session, epoch: this.epoch, dataPort: this.data.port },
      `registered with the coordinator at ${this.config.coordinatorHost}:${this.config.coordinatorPort}`,
    );
    const timeout = this.config.coordinatorHeartbeatTimeoutMs;
    // A v1 coordinator may not answer heartbeats: against one, only the connection's end counts.
    this.coordinatorSilenceLimitMs = ack.protocolVersion >= HEARTBEAT_ACK_PROTOCOL_VERSION && timeout > 0 ? timeout : 0;
    this.confirmsCommits = ack.protocolVersion >= COMMIT_CONFIRMATION_PROTOCOL_VERSION;
    this.lastCoordinatorFrameAt = this.clock.now();
    this.conn.start({
      onRead: () => {
        this.lastCoordinatorFrameAt = this.clock.now();
        return false;
      },
      onMessage: (m) => this.handle(m),
    });
    void this.conn.closed.then((c) => {
      if (!this.closing) this.end({ reason: 'disconnected', detail: c.error?.message ?? c.reason });
    });
    this.stopHeartbeat = this.clock.every(this.config.heartbeatIntervalMs, () => this.sendHeartbeat());
    const stallMs = this.config.taskStallTimeoutMs;
    this.stopStallWatch = this.clock.every(Math.max(50, Math.min(1_000, stallMs / 4)), () => {
      const now = this.clock.now();
      for (const j of this.runners) j.check(now);
    });
    this.deps.metrics.sources.add(this.metricsSource);
    if (this.isolated) this.spare = this.newThread();
  }

  private sendHeartbeat(): void {
    const silent = this.clock.now() - this.lastCoordinatorFrameAt;
    if (this.coordinatorSilenceLimitMs > 0 && silent > this.coordinatorSilenceLimitMs) {
      const detail = `no frame from the coordinator for ${silent} ms (coordinator heartbeat timeout ${this.coordinatorSilenceLimitMs} ms)`;
      this.log.warn(detail);
      this.end({ reason: 'disconnected', detail });
      this.conn.close();
      return;
    }
    const jobs: MessageOf<'Heartbeat'>['jobs'] = [];
    const subtasks: SubtaskProgressReport[] = [];
    for (const j of this.runners) {
      if (!j.running) continue;
      const p = j.progress();
      jobs.push({ jobId: j.jobId, sourceRecords: p.sourceRecords, sinkRecords: p.sinkRecords });
      for (const s of p.subtasks) subtasks.push(s);
    }
    this.send(
      makeMessage('Heartbeat', {
        seq: ++this.seq,
        sentAtMs: this.clock.now(),
        runningSubtasks: jobs.length,
        jobs,
        subtasks,
      }),
    );
  }

  private send(m: Message): void {
    // A coordinator before protocol 3 does not know the kind, and would drop the connection for it.
    if (m.type === 'CheckpointCommitted' && !this.confirmsCommits) return;
    this.conn.send(m);
  }

  /** Coordinator frames carry its epoch: an older one is a superseded coordinator and is dropped. */
  private admitEpoch(m: Message): boolean {
    const e = (m as { epoch?: number }).epoch;
    if (e === undefined) return true;
    if (e < this.epoch) {
      this.fencedFrames++;
      this.deps.metrics.fencedFrames.inc();
      this.log.error(
        { frameEpoch: e, boundEpoch: this.epoch },
        `dropped ${m.type} from a superseded coordinator (epoch ${e} < ${this.epoch})`,
      );
      return false;
    }
    this.epoch = e;
    return true;
  }

  private handle(m: Message): void {
    if (!this.admitEpoch(m)) return;
    if (m.type === 'HeartbeatAck' || m.type === 'StartJob') return;
    if (!JOB_FRAME_TYPES.has(m.type)) {
      this.log.debug({ type: m.type }, `ignoring ${m.type}: not handled by this worker yet`);
      return;
    }
    const frame = m as JobFrame;
    if (frame.type === 'Deploy') {
      const deploy = this.withModule(frame);
      if (!deploy) return;
      this.runnerFor(frame.jobId).post(deploy);
      return;
    }
    this.jobs.get(frame.jobId)?.post(frame);
  }

  /**
   * The Deploy with its module's bytes: the coordinator sends them to a session once and refers to
   * them by hash after. A reference this session cannot resolve fails the deploy, loudly.
   */
  private withModule(m: MessageOf<'Deploy'>): MessageOf<'Deploy'> | undefined {
    const ref = m.modules[0];
    let error: string | undefined;
    if (!ref) error = 'Deploy carries no job module';
    else {
      if (ref.bytes.length > 0) this.modules.set(ref.sha256, { bytes: ref.bytes, sourceMap: ref.sourceMap });
      const held = this.modules.get(ref.sha256);
      if (held) return { ...m, modules: [{ sha256: ref.sha256, bytes: held.bytes, sourceMap: held.sourceMap }] };
      error = `Deploy of ${m.jobName} refers to job module ${ref.sha256}, which worker ${this.config.id} does not hold; refusing to run without it`;
    }
    this.log.error({ jobId: m.jobId }, `deploy of job ${m.jobId} failed: ${error}`);
    for (const t of m.tasks)
      this.send(
        makeMessage('SubtaskFinished', {
          jobId: m.jobId,
          taskId: t.taskId,
          subtaskIndex: t.subtaskIndex,
          ok: false,
          error,
          fatal: true,
        }),
      );
    return undefined;
  }

  /** The runner of a job's frames here, started on its first Deploy (again after its last ended). */
  private runnerFor(jobId: string): JobRunner {
    const current = this.jobs.get(jobId);
    if (current) return current;
    let runner: JobRunner;
    if (this.isolated) {
      // The warm thread takes the job. No other warms up meanwhile (booting one would take CPU from
      // the job): a thread whose job ends becomes the next spare, and a job beside a running one
      // starts a thread of its own.
      runner = (this.spare ?? this.newThread()).assign(jobId);
      this.spare = undefined;
    } else
      runner = new InProcessJob(
        jobId,
        this.hostConfig(),
        {
          data: this.data,
          log: this.log,
          metrics: this.deps.metrics,
          stdout: this.deps.stdout ?? writeStdout,
          send: (m: Message) => this.send(m),
        },
        (r) => this.forget(r),
      );
    this.jobs.set(jobId, runner);
    this.runners.add(runner);
    return runner;
  }

  private get isolated(): boolean {
    return this.config.taskIsolation === 'thread';
  }

  private hostConfig(): JobHostConfig {
    return {
      workerId: this.config.id,
      peerUpdateTimeoutMs: this.config.peerUpdateTimeoutMs,
      batchSize: this.config.batchSize,
      batchLingerMs: this.config.batchLingerMs,
      debloatTargetMs: this.config.debloatTargetMs ?? 0,
      ...(this.config.localStateDir ? { localStateDir: this.config.localStateDir } : {}),
      ...(this.config.stateCacheEntries ? { stateCacheEntries: this.config.stateCacheEntries } : {}),
      ...(this.config.cacheDir ? { cacheDir: this.config.cacheDir } : {}),
      ...(this.deps.tls ? { tls: this.deps.tls } : {}),
      dataTransport: this.config.dataTransport,
      maxInflightFrameBytes: this.config.maxInflightFrameBytes,
    };
  }

  /** A job thread, started warm (the engine loaded, no job yet), so a Deploy does not wait for one to boot. */
  private newThread(): JobThread {
    return new JobThread({
      config: this.hostConfig(),
      dataHost: this.config.dataHost,
      stallTimeoutMs: this.config.taskStallTimeoutMs,
      startedAt: this.clock.now(),
      heapMb: this.config.taskHeapMb,
      youngGenerationMb: this.config.taskYoungGenerationMb,
      log: this.log,
      send: (m) => this.send(m),
      onIdle: (r) => {
        this.forget(r);
        if (this.closing) return false;
        // Kept for the next job instead of the spare: its engine code is compiled already, the spare's is not.
        const cold = this.spare;
        this.spare = r;
        void cold?.close('replaced by a thread whose job ended', JOB_CLOSE_GRACE_MS);
        return true;
      },
      onExit: (r) => {
        if (this.spare === r) this.spare = undefined;
        this.forget(r);
        this.onDataPorts?.();
      },
      onListening: () => this.onDataPorts?.(),
    });
  }

  /** A runner takes no more frames (its job is done here): a later Deploy of the job starts another. */
  private detach(r: JobRunner): void {
    if (r.jobId && this.jobs.get(r.jobId) === r) this.jobs.delete(r.jobId);
  }

  private forget(r: JobRunner): void {
    this.detach(r);
    this.runners.delete(r);
  }

  private end(e: WorkerEnd): void {
    if (this.endedWith) return;
    this.endedWith = e;
    this.stopHeartbeat?.();
    this.stopHeartbeat = undefined;
    for (const job of this.runners)
      job.cancel(e.reason === 'closed' ? 'the worker is stopping' : 'the coordinator connection was lost');
    this.resolveEnded(e);
  }

  /**
   * Cancel every task, close the coordinator connection and the data listener. `leaving`: the worker
   * is shutting down, and says so first, so the coordinator retires the session at once instead of
   * declaring it lost a heartbeat timeout later (bounded: a coordinator that does not read is not waited for).
   */
  async close(options: { leaving?: boolean } = {}): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (options.leaving && !this.endedWith && !this.conn.socket.destroyed) {
      const bye = makeMessage('Heartbeat', {
        seq: ++this.seq,
        sentAtMs: this.clock.now(),
        runningSubtasks: 0,
        jobs: [],
        leaving: true,
      });
      await writeFrame(this.conn.socket, bye, LEAVING_SEND_BOUND_MS).catch(() => undefined);
    }
    this.end({ reason: 'closed' });
    this.conn.close();
    this.stopStallWatch?.();
    // Subtasks were told to stop; a thread that has not ended within its grace is terminated.
    const spare = this.spare;
    this.spare = undefined;
    await Promise.all(
      [...this.runners, ...(spare ? [spare] : [])].map((j) => j.close('the worker is stopping', JOB_CLOSE_GRACE_MS)),
    );
    this.deps.metrics.sources.delete(this.metricsSource);
    await this.data.close();
  }
}

/** How long a stopping worker waits for its goodbye to reach the socket. */
const LEAVING_SEND_BOUND_MS = 500;

export class RegistrationRefusedError extends ClinkError {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super('CLINK_ERR_REGISTRATION_REFUSED', `the coordinator refused the registration: ${message}`);
  }
}

function writeStdout(text: string): void {
  process.stdout.write(text);
}
