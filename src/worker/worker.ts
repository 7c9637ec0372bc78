/**
 * Worker: one control session with the coordinator. It registers, heartbeats, and runs what it is
 * deployed. Frames from the coordinator are handled one at a time in order (FIFO), so a Deploy that
 * loads a module delays the next frame but never the heartbeat, which runs on its own timer.
 */
import { mkdir } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { ClinkError } from '../errors.js';
import { DataServer } from '../dataplane/index.js';
import { loadJobBundle } from '../loader/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { FrameConnection, writeFrame } from '../net/index.js';
import {
  checkProtocolCompatibility,
  HEARTBEAT_ACK_PROTOCOL_VERSION,
  LOCAL_PROTOCOL,
  makeMessage,
  ProtocolVersionError,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import { buildJob } from '../sdk/index.js';
import { WorkerJob, type SubtaskReport } from './job.js';
import { jobStateDir, writeStateFile, type WrittenStateFile } from '../state/index.js';
import type { SubtaskSnapshot } from '../runtime/index.js';
import { setRepeating, setTimer } from '../util/index.js';

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 500;
export const DEFAULT_PEER_UPDATE_TIMEOUT_MS = 30_000;
export const DEFAULT_WORKER_SLOTS = 1;

export interface WorkerConfig {
  id: string;
  coordinatorHost: string;
  coordinatorPort: number;
  /** @default 1 */
  slots: number;
  /** The host other workers reach this one's data port on. */
  dataHost: string;
  /** @default 500 */
  heartbeatIntervalMs: number;
  /** @default 30,000 */
  peerUpdateTimeoutMs: number;
  /** How long connecting and registering may take. @default 5,000 */
  connectTimeoutMs?: number;
  httpPort?: number;
  cacheDir?: string;
  /** Records per batch between tasks. @default 1000 */
  batchSize?: number;
  /** How long a partly filled batch may wait to fill before it is sent. @default 0 */
  batchLingerMs?: number;
  /**
   * With a v2 coordinator: end the session when no frame came from it for this long (it answers each
   * heartbeat), catching partitions that leave the socket writable. 0 turns it off. @default 3,000
   */
  coordinatorHeartbeatTimeoutMs?: number;
}

export const DEFAULT_COORDINATOR_HEARTBEAT_TIMEOUT_MS = 3_000;

export interface WorkerDeps {
  log: Logger;
  metrics: ClinkMetrics;
  /** Where print() writes. @default process.stdout */
  stdout?: (text: string) => void | Promise<void>;
}

/** Why a worker session ended. */
export type WorkerEnd = { reason: 'closed' } | { reason: 'disconnected'; detail: string };

export class Worker {
  private conn!: FrameConnection;
  private data!: DataServer;
  /** Each Deploy received, by job: a retry deploys part of a job again beside the rest of it. */
  private readonly jobs = new Map<string, WorkerJob[]>();
  /** Job modules this session has received, by hash; the coordinator sends a reference after the first. */
  private readonly modules = new Map<string, { bytes: Uint8Array; sourceMap: Uint8Array }>();
  private heartbeat: NodeJS.Timeout | undefined;
  private lastCoordinatorFrameAt = 0;
  private endedWith: WorkerEnd | undefined;
  private coordinatorSilenceLimitMs = 0;
  private seq = 0;
  private closing = false;
  /** The epoch of the coordinator this session registered with (0 = unfenced). */
  epoch = 0;
  session = 0;
  fencedFrames = 0;
  readonly ended: Promise<WorkerEnd>;
  private resolveEnded!: (e: WorkerEnd) => void;
  private readonly log: Logger;

  private constructor(
    readonly config: WorkerConfig,
    private readonly deps: WorkerDeps,
  ) {
    this.log = deps.log.child({ component: 'worker', workerId: config.id });
    this.ended = new Promise((r) => (this.resolveEnded = r));
  }

  /** Start the data listener, connect, register and begin heartbeating. */
  static async start(config: WorkerConfig, deps: WorkerDeps): Promise<Worker> {
    const w = new Worker(config, deps);
    w.data = await DataServer.start({ host: config.dataHost, log: w.log, metrics: deps.metrics });
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

  private async register(): Promise<void> {
    const timeoutMs = this.config.connectTimeoutMs ?? 5_000;
    const socket = await connectWithin(this.config.coordinatorHost, this.config.coordinatorPort, timeoutMs);
    this.conn = new FrameConnection(socket, { role: 'worker', log: this.log, metrics: this.deps.metrics, readTimeoutMs: timeoutMs });
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
      }),
      timeoutMs,
    );
    const ack = await this.conn.readOne().catch((err: unknown) => {
      socket.destroy();
      throw err;
    });
    if (!ack || ack.type !== 'RegisterAck') {
      socket.destroy();
      throw new ClinkError('CLINK_ERR_MALFORMED_FRAME', `coordinator answered Register with ${ack ? ack.type : 'nothing'}`);
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
    this.log.info({ session: this.session, epoch: this.epoch, dataPort: this.data.port }, `registered with the coordinator at ${this.config.coordinatorHost}:${this.config.coordinatorPort}`);
    const timeout = this.config.coordinatorHeartbeatTimeoutMs ?? DEFAULT_COORDINATOR_HEARTBEAT_TIMEOUT_MS;
    // A v1 coordinator may not answer heartbeats: against one, only the connection's end counts.
    this.coordinatorSilenceLimitMs = ack.protocolVersion >= HEARTBEAT_ACK_PROTOCOL_VERSION && timeout > 0 ? timeout : 0;
    this.lastCoordinatorFrameAt = Date.now();
    this.conn.start({
      onRead: () => {
        this.lastCoordinatorFrameAt = Date.now();
        return false;
      },
      onMessage: (m) => this.handle(m),
    });
    void this.conn.closed.then((c) => {
      if (!this.closing) this.end({ reason: 'disconnected', detail: c.error?.message ?? c.reason });
    });
    this.heartbeat = setRepeating(() => this.sendHeartbeat(), this.config.heartbeatIntervalMs);
  }

  private sendHeartbeat(): void {
    const silent = Date.now() - this.lastCoordinatorFrameAt;
    if (this.coordinatorSilenceLimitMs > 0 && silent > this.coordinatorSilenceLimitMs) {
      const detail = `no frame from the coordinator for ${silent} ms (coordinator heartbeat timeout ${this.coordinatorSilenceLimitMs} ms)`;
      this.log.warn(detail);
      this.end({ reason: 'disconnected', detail });
      this.conn.close();
      return;
    }
    const jobs = [...this.jobs.values()].filter((parts) => parts.some((j) => !j.finished)).map((parts) => ({ jobId: parts[0]!.jobId, ...sumProgress(parts) }));
    this.send(makeMessage('Heartbeat', { seq: ++this.seq, sentAtMs: Date.now(), runningSubtasks: jobs.length, jobs }));
  }

  private send(m: Message): void {
    this.conn.send(m);
  }

  /** Coordinator frames carry its epoch: an older one is a superseded coordinator and is dropped. */
  private admitEpoch(m: Message): boolean {
    const e = (m as { epoch?: number }).epoch;
    if (e === undefined) return true;
    if (e < this.epoch) {
      this.fencedFrames++;
      this.deps.metrics.fencedFrames.inc();
      this.log.error({ frameEpoch: e, boundEpoch: this.epoch }, `dropped ${m.type} from a superseded coordinator (epoch ${e} < ${this.epoch})`);
      return false;
    }
    this.epoch = e;
    return true;
  }

  private async handle(m: Message): Promise<void> {
    if (!this.admitEpoch(m)) return;
    switch (m.type) {
      case 'Deploy':
        await this.deploy(m);
        return;
      case 'PeerUpdate': {
        const parts = this.partsOf(m.jobId);
        // A coordinator before PeerUpdate.attempt sends 0 for every attempt: then the one not started.
        (parts.find((j) => j.attempt === m.attempt && !j.isStarted) ?? parts.find((j) => !j.isStarted))?.start(m);
        return;
      }
      case 'CancelJob':
        // Test hook: a worker whose subtasks never drain.
        if (process.env.CLINK_TEST_IGNORE_CANCEL === '1') return;
        for (const j of this.partsOf(m.jobId)) j.cancel(m.reason || 'cancelled by the coordinator', m.subtasks);
        return;
      case 'TriggerCheckpoint': {
        // A job that checkpoints is never retried in part: its newest deploy here is all of it.
        const job = this.partsOf(m.jobId).at(-1);
        if (job && m.savepointDir) job.savepointDirs.set(m.checkpointId, m.savepointDir);
        if (job && !job.triggerCheckpoint(m.checkpointId)) {
          // Declined: say so at once, so the coordinator aborts it instead of waiting out its timeout.
          const why = `worker ${this.config.id} declined it: not every subtask of the job here is running`;
          this.log.info({ jobId: m.jobId, checkpointId: m.checkpointId }, `checkpoint ${m.checkpointId} of job ${m.jobId} declined: not every subtask here is running`);
          const first = job.subtasks[0];
          if (first) this.ackSnapshot(job, m.checkpointId, first.task.id, first.index, new Error(why));
        }
        return;
      }
      case 'CommitCheckpoint':
        // On the FIFO dispatch chain, not the reader: a slow commit never holds up frames' reading.
        for (const j of this.partsOf(m.jobId)) await j.notifyCheckpointComplete(m.checkpointId);
        return;
      case 'AbortCheckpoint':
        for (const j of this.partsOf(m.jobId)) j.notifyCheckpointAborted(m.checkpointId, m.reason);
        return;
      case 'FinalCheckpointAssigned':
        for (const j of this.partsOf(m.jobId)) j.assignFinalCheckpoint(m.checkpointId);
        return;
      case 'HeartbeatAck':
      case 'StartJob':
        return;
      default:
        this.log.debug({ type: m.type }, `ignoring ${m.type}: not handled by this worker yet`);
    }
  }

  private async deploy(m: MessageOf<'Deploy'>): Promise<void> {
    const fail = (error: string, fatal: boolean): void => {
      for (const t of m.tasks) {
        this.send(makeMessage('SubtaskFinished', { jobId: m.jobId, taskId: t.taskId, subtaskIndex: t.subtaskIndex, ok: false, error, fatal }));
      }
    };
    let job: WorkerJob;
    try {
      const ref = m.modules[0];
      if (!ref) throw new ClinkError('CLINK_ERR_JOB_LOAD', 'Deploy carries no job module');
      if (ref.bytes.length > 0) this.modules.set(ref.sha256, { bytes: ref.bytes, sourceMap: ref.sourceMap });
      const module = this.modules.get(ref.sha256);
      if (!module) {
        throw new ClinkError('CLINK_ERR_MODULE_MISSING', `Deploy of ${m.jobName} refers to job module ${ref.sha256}, which worker ${this.config.id} does not hold; refusing to run without it`);
      }
      const loaded = await loadJobBundle(module.bytes, {
        expectedSha256: ref.sha256,
        sourceMap: module.sourceMap,
        label: `job module of ${m.jobName}`,
        ...(this.config.cacheDir ? { cacheDir: this.config.cacheDir } : {}),
      });
      // Test hook: forget modules once loaded, so the next reference to one cannot resolve.
      if (process.env.CLINK_TEST_FORGET_MODULES === '1') this.modules.clear();
      const spec = JSON.parse(m.specJson) as { defaultParallelism: number };
      const params = JSON.parse(m.params) as Record<string, string>;
      const built = buildJob(loaded.job, { parallelism: m.buildParallelism || spec.defaultParallelism, params });
      if (JSON.stringify(built.spec) !== m.specJson) {
        throw new ClinkError(
          'CLINK_ERR_JOB_DEFINITION',
          `job module of ${m.jobName} built a different plan on worker ${this.config.id} than the one submitted; a build function must declare the same operators in the same order every time`,
        );
      }
      job = new WorkerJob(m, built, this.data, this.deps.stdout ?? writeStdout, (r) => this.reportFinished(job, r), this.deps.metrics, {
        batchSize: this.config.batchSize ?? 1_000,
        lingerMs: this.config.batchLingerMs ?? 0,
      });
      // These subtasks of an earlier deploy are superseded (drained already, normally); the rest of that
      // deploy (other failover regions, after a retry) runs on.
      const keys = new Set(m.tasks.map((t) => `${t.taskId}#${t.subtaskIndex}`));
      const parts = this.partsOf(m.jobId).filter((j) => {
        if (!j.holdsAny(keys)) return true;
        j.cancel('redeployed', [...keys]);
        return !j.finished;
      });
      this.jobs.set(m.jobId, [...parts, job]);
      job.onSnapshot = (id, taskId, index, snap, alignmentMs) => void this.writeSnapshot(job, id, taskId, index, snap, alignmentMs);
      job.onSnapshotFailed = (id, taskId, index, err) => this.ackSnapshot(job, id, taskId, index, err);
      job.onAlignmentCancelled = (id, by, taskId, index) =>
        this.log.warn({ jobId: m.jobId, checkpointId: id, by }, `subtask ${taskId}#${index} of job ${m.jobId}: barrier ${by} cancelled the alignment of checkpoint ${id}, which was given up upstream`);
      job.onRequestFinalCheckpoint = (taskId, subtaskIndex) => this.send(makeMessage('RequestFinalCheckpoint', { jobId: m.jobId, taskId, subtaskIndex }));
      const listenings = job.prepare(this.config.peerUpdateTimeoutMs);
      await job.loadRestoreState();
      for (const l of listenings) this.send(makeMessage('SubtaskListening', l));
    } catch (err) {
      this.log.error({ err, jobId: m.jobId }, `deploy of job ${m.jobId} failed: ${(err as Error).message}`);
      fail((err as Error).message, true);
    }
  }

  /** Write a subtask's snapshot under the job's checkpoint directory, then ack it. */
  private async writeSnapshot(job: WorkerJob, checkpointId: number, taskId: string, index: number, snap: SubtaskSnapshot, alignmentMs: number): Promise<void> {
    try {
      const base = job.savepointDirs.get(checkpointId) ?? jobStateDir(job.deploy.checkpoint, job.jobId);
      const dir = join(base, `chk-${checkpointId}`);
      await mkdir(dir, { recursive: true });
      const written = await writeStateFile(join(dir, `${taskId}#${index}.state`), snap);
      this.ackSnapshot(job, checkpointId, taskId, index, undefined, written, alignmentMs);
    } catch (err) {
      this.ackSnapshot(job, checkpointId, taskId, index, err);
    }
  }

  /** SubtaskCheckpointed: the subtask's state is durable (`error` undefined), or the checkpoint must abort. */
  private ackSnapshot(job: WorkerJob, checkpointId: number, taskId: string, index: number, error: unknown, written?: WrittenStateFile, alignmentMs = 0): void {
    const ok = error === undefined;
    const message = ok ? '' : ((error as Error)?.message ?? String(error));
    this.send(
      makeMessage('SubtaskCheckpointed', {
        jobId: job.jobId,
        checkpointId,
        taskId,
        subtaskIndex: index,
        ok,
        error: message,
        stateBytes: written?.bytes ?? 0,
        alignmentMs: Math.round(alignmentMs),
        stateSha256: written?.sha256 ?? '',
      }),
    );
  }

  private partsOf(jobId: string): readonly WorkerJob[] {
    return this.jobs.get(jobId) ?? [];
  }

  private reportFinished(job: WorkerJob, r: SubtaskReport): void {
    this.send(makeMessage('SubtaskFinished', { jobId: job.jobId, ...r, fatal: false }));
    if (!job.finished) return;
    const rest = this.partsOf(job.jobId).filter((j) => j !== job);
    if (rest.length > 0) this.jobs.set(job.jobId, rest);
    else this.jobs.delete(job.jobId);
  }

  private end(e: WorkerEnd): void {
    if (this.endedWith) return;
    this.endedWith = e;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const parts of this.jobs.values()) for (const job of parts) job.cancel(e.reason === 'closed' ? 'the worker is stopping' : 'the coordinator connection was lost');
    this.resolveEnded(e);
  }

  /** Cancel every task, close the coordinator connection and the data listener. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.end({ reason: 'closed' });
    this.conn.close();
    await this.data.close();
  }
}

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

function connectWithin(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true });
    const timer = setTimer(() => {
      socket.destroy();
      reject(new ClinkError('CLINK_ERR_FRAME_TIMEOUT', `could not connect to the coordinator at ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(new ClinkError('CLINK_ERR_CONNECTOR', `could not connect to the coordinator at ${host}:${port}: ${err.message}`, { cause: err }));
    });
  });
}

function sumProgress(parts: readonly WorkerJob[]): { sourceRecords: number; sinkRecords: number } {
  let sourceRecords = 0;
  let sinkRecords = 0;
  for (const j of parts) {
    const p = j.progress();
    sourceRecords += p.sourceRecords;
    sinkRecords += p.sinkRecords;
  }
  return { sourceRecords, sinkRecords };
}
