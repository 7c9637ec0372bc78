/**
 * JobHost: everything a worker does for one job, apart from its control session. It takes the job's
 * frames from the coordinator (Deploy, PeerUpdate, CancelJob, the checkpoint frames) in order, runs
 * the deployed subtasks (one WorkerJob per Deploy: a retry deploys part of a job again beside the rest
 * of it) on a DataServer of its own, writes their checkpoint state, and hands every frame it sends
 * back (SubtaskListening, SubtaskFinished, SubtaskCheckpointed, RequestFinalCheckpoint) to `send`.
 *
 * It runs in a job thread (job-thread.ts), so user code that spins or allocates without bound can
 * never hold the worker's heartbeats: the session only forwards frames. With task isolation off it
 * runs on the session's own event loop.
 */
import { ClinkError } from '../errors.js';
import type { DataPlane, DataTransport } from '../dataplane/index.js';
import type { TlsClientConfig, TlsServerConfig } from '../net/index.js';
import { loadJobBundle } from '../loader/index.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { makeMessage, type Message, type MessageOf } from '../protocol/index.js';
import type { SnapshotStats, SubtaskPhaseCode, SubtaskSnapshot } from '../runtime/index.js';
import { buildJob } from '../sdk/index.js';
import {
  checkpointStateDir,
  jobStateDir,
  removeAbortedState,
  subtaskStateFile,
  writeStateFile,
  type WrittenStateFile,
} from '../state/index.js';
import { WorkerJob, type JobProgressReport, type SubtaskReport } from './deployed-job.js';
import { armCutover, cutoverOf, rebindCutover, releaseCutover, type ArmedCutover } from './hot-rescale-host.js';
import { subtaskKey, type JobGraphSpec } from '../plan/index.js';
import { makeDirectory, RecentIds } from '../util/index.js';

/** The kinds of frame a JobHost handles: those of one job. */
const JOB_FRAME_KINDS = [
  'Deploy',
  'PeerUpdate',
  'CancelJob',
  'TriggerCheckpoint',
  'ConvertCheckpoint',
  'CommitCheckpoint',
  'AbortCheckpoint',
  'FinalCheckpointAssigned',
  'BeginRescale',
  'CutoverRebind',
  'CutoverPeerUpdate',
] as const;

export type JobFrame = MessageOf<(typeof JOB_FRAME_KINDS)[number]>;

export const JOB_FRAME_TYPES: ReadonlySet<string> = new Set(JOB_FRAME_KINDS);

export interface JobHostConfig {
  workerId: string;
  peerUpdateTimeoutMs: number;
  batchSize: number;
  batchLingerMs: number;
  debloatTargetMs?: number;
  /** Where jobs on the disk state backend keep their stores (WorkerConfig.localStateDir). */
  localStateDir?: string;
  /** Decoded values the disk state backend caches per state and subtask (WorkerConfig.stateCacheEntries). */
  stateCacheEntries?: number;
  cacheDir?: string;
  /** TLS of the data plane (PEM buffers: a job thread is handed them). */
  tls?: WorkerTls;
  /** How its channels to other workers travel (see WorkerConfig.dataTransport). @default 'link' */
  dataTransport?: DataTransport;
  /** What its data connections' partial frames may hold together (--max-inflight-frame-bytes). */
  maxInflightFrameBytes?: number;
}

/**
 * A worker's TLS: `client` verifies the coordinator and data peers (and presents this worker's
 * certificate under mTLS); `server` is its data port's certificate, which peers verify.
 */
export interface WorkerTls {
  client?: TlsClientConfig;
  server?: TlsServerConfig;
}

export interface JobHostDeps {
  data: DataPlane;
  log: Logger;
  metrics: ClinkMetrics;
  stdout: (text: string) => void | Promise<void>;
  send: (m: Message) => void;
  /** Gives each subtask, once, what it tells what it starts doing (a job thread's stall watchdog reads it). */
  phaseReporter?: (taskId: string, subtaskIndex: number) => (phase: SubtaskPhaseCode) => void;
  /** Told when the job is done here: after the last subtask's end and the last state file's ack are sent. */
  onFinished?: () => void;
}

export class JobHost {
  /** Each Deploy received for the job, oldest first. */
  private parts: WorkerJob[] = [];
  private deployed = false;
  /** State files being written: a subtask reports its end before its last snapshot is durable. */
  private pendingWrites = 0;
  /** A hot rescale armed here (BeginRescale), until its CutoverPeerUpdate. */
  private cutover: (ArmedCutover & { rebound?: boolean }) | undefined;
  /** Checkpoints aborted (AbortCheckpoint): a state write that ends after it removes what it wrote. */
  private readonly aborted = new RecentIds(64);
  /** When each recent TriggerCheckpoint came (performance.now): a subtask's start delay counts from it. */
  private readonly triggeredAt = new Map<number, number>();

  constructor(
    readonly jobId: string,
    private readonly config: JobHostConfig,
    private readonly deps: JobHostDeps,
  ) {}

  /** Every deploy has ended (at least one came) and every state file is written and acked. */
  get finished(): boolean {
    return this.deployed && this.pendingWrites === 0 && this.parts.every((j) => j.finished) && !this.cutover;
  }

  async handle(m: JobFrame): Promise<void> {
    switch (m.type) {
      case 'Deploy':
        await this.deploy(m);
        return;
      case 'PeerUpdate':
        // A coordinator before PeerUpdate.attempt sends 0 for every attempt: then the one not started.
        (
          this.parts.find((j) => j.attempt === m.attempt && !j.isStarted) ?? this.parts.find((j) => !j.isStarted)
        )?.start(m);
        return;
      case 'CancelJob':
        // The whole job stops (a restart, a replan): a hot rescale armed here is over.
        if (m.subtasks.length === 0) this.cutover = undefined;
        for (const j of this.parts) j.cancel(m.reason || 'cancelled by the coordinator', m.subtasks);
        return;
      case 'TriggerCheckpoint':
        this.triggerCheckpoint(m);
        return;
      case 'ConvertCheckpoint':
        for (const j of this.parts) j.convertCheckpoint(m.checkpointId);
        return;
      case 'CommitCheckpoint':
        await this.commit(m.checkpointId);
        return;
      case 'AbortCheckpoint':
        this.aborted.add(m.checkpointId);
        for (const j of this.parts) j.notifyCheckpointAborted(m.checkpointId, m.reason);
        return;
      case 'FinalCheckpointAssigned':
        for (const j of this.parts) j.assignFinalCheckpoint(m.checkpointId);
        return;
      case 'BeginRescale':
      case 'CutoverRebind':
      case 'CutoverPeerUpdate':
        await this.cutoverStep(m);
        return;
    }
  }

  /** Every subtask here commits the checkpoint, then the coordinator hears which did (CheckpointCommitted). */
  private async commit(checkpointId: number): Promise<void> {
    const committed: string[] = [];
    const errors: string[] = [];
    for (const j of this.parts) {
      const r = await j.notifyCheckpointComplete(checkpointId);
      committed.push(...r.committed);
      errors.push(...r.errors);
    }
    for (const e of errors) this.deps.log.error({ jobId: this.jobId, checkpointId }, e);
    if (committed.length > 0 || errors.length > 0) {
      this.deps.send(
        makeMessage('CheckpointCommitted', {
          jobId: this.jobId,
          checkpointId,
          subtasks: committed,
          error: errors.join('; '),
        }),
      );
    }
  }

  private triggerCheckpoint(m: MessageOf<'TriggerCheckpoint'>): void {
    // A job that checkpoints is never retried in part, but a hot rescale leaves its new subtasks in a
    // deploy of their own beside the rest: every deploy with subtasks running takes part.
    const live = this.parts.filter((j) => !j.finished);
    const job = live.at(-1);
    if (!job) return;
    for (const j of live) if (m.savepointDir) j.savepointDirs.set(m.checkpointId, m.savepointDir);
    // A deploy still waiting for its peers takes part as it starts (DeployedJob.triggerCheckpoint).
    if (live.every((j) => j.checkpointable || j.starting)) {
      this.triggeredAt.set(m.checkpointId, performance.now());
      // Kept for the few checkpoints a slow subtask may still be acking.
      for (const id of this.triggeredAt.keys()) if (this.triggeredAt.size > 16) this.triggeredAt.delete(id);
      for (const j of live) j.triggerCheckpoint(m.checkpointId, m.unaligned);
      return;
    }
    // Declined (a subtask here ended or failed): say so at once, so the coordinator aborts it instead
    // of waiting out its timeout.
    this.deps.log.info(
      { jobId: this.jobId, checkpointId: m.checkpointId },
      `checkpoint ${m.checkpointId} of job ${this.jobId} declined: not every subtask here is running`,
    );
    const first = job.subtasks[0];
    if (first)
      this.ackSnapshot(
        job,
        m.checkpointId,
        first.task.id,
        first.index,
        new Error(`worker ${this.config.workerId} declined it: not every subtask of the job here is running`),
      );
  }

  /** A hot rescale's steps (hot-rescale-host.ts), each answered with a BeginRescaleAck naming it. */
  private async cutoverStep(m: MessageOf<'BeginRescale' | 'CutoverRebind' | 'CutoverPeerUpdate'>): Promise<void> {
    const phase = m.type === 'BeginRescale' ? 'armed' : m.type === 'CutoverRebind' ? 'rebound' : 'released';
    const live = this.parts.filter((j) => !j.finished);
    let count = 0;
    let error: string | undefined;
    try {
      if (m.type === 'BeginRescale') {
        if (live.length === 0) throw new Error(`no subtask of job ${this.jobId} runs here`);
        const c = (this.cutover = cutoverOf(m));
        for (const j of live) {
          const armed = armCutover(j, c);
          if (typeof armed === 'string') throw new Error(armed);
          count += armed;
        }
      } else {
        const c = this.cutover;
        if (!c || c.rescaleId !== m.rescaleId) throw new Error(`rescale ${m.rescaleId} is not armed here`);
        if (m.type === 'CutoverRebind') for (const j of live) count += await rebindCutover(j, c);
        else {
          this.cutover = undefined;
          // An empty update with nothing rebound gives the rescale up: the armed subtasks only go on.
          for (const j of live) count += releaseCutover(j, c, m.subtasks.length > 0 || c.rebound ? m : undefined);
        }
        if (m.type === 'CutoverRebind') c.rebound = true;
      }
    } catch (err) {
      error = (err as Error).message;
      this.deps.log.warn(
        { jobId: this.jobId, rescaleId: m.rescaleId },
        `hot rescale ${m.rescaleId} of job ${this.jobId} (${phase}): ${error}`,
      );
    }
    this.deps.send(
      makeMessage('BeginRescaleAck', {
        jobId: this.jobId,
        rescaleId: m.rescaleId,
        ok: error === undefined,
        armedSubtasks: count,
        message: error ?? '',
        phase,
      }),
    );
    // Its old subtasks retired, none new came: the job is done here once the rescale lets it go.
    if (this.finished) this.deps.onFinished?.();
  }

  private async deploy(m: MessageOf<'Deploy'>): Promise<void> {
    this.deployed = true;
    let job: WorkerJob;
    // A deploy that fails reading its state is restarted like any other failure (a disk or a network
    // share may come back); one that fails before (its module, its plan) would fail the same way again.
    let restoring = false;
    try {
      const module = m.modules[0];
      if (!module || module.bytes.length === 0)
        throw new ClinkError('CLINK_ERR_MODULE_MISSING', `Deploy of ${m.jobName} reached the job without its module`);
      const loaded = await loadJobBundle(module.bytes, {
        expectedSha256: module.sha256,
        sourceMap: module.sourceMap,
        label: `job module of ${m.jobName}`,
        ...(this.config.cacheDir ? { cacheDir: this.config.cacheDir } : {}),
      });
      const spec = JSON.parse(m.specJson) as JobGraphSpec;
      const params = JSON.parse(m.params) as Record<string, string>;
      // Each operator at the parallelism the spec gives it: a rescale may have changed it since the submit.
      const parallelismOf = Object.fromEntries(spec.operators.map((o) => [o.id, o.parallelism]));
      const built = buildJob(loaded.job, {
        parallelism: m.buildParallelism || spec.defaultParallelism,
        params,
        parallelismOf,
      });
      // The guarantee asked for is the submit's (--guarantee may override defineJob's), not the plan's.
      const plan = (s: JobGraphSpec): string => {
        const { guarantee: _, ...job } = s.job;
        return JSON.stringify({ ...s, job });
      };
      if (plan(built.spec) !== plan(spec)) {
        throw new ClinkError(
          'CLINK_ERR_JOB_DEFINITION',
          `job module of ${m.jobName} built a different plan on worker ${this.config.workerId} than the one submitted; a build function must declare the same operators in the same order every time`,
        );
      }
      job = new WorkerJob(
        m,
        built,
        this.deps.data,
        this.deps.stdout,
        (r) => this.reportFinished(job, r),
        this.deps.metrics,
        {
          batchSize: this.config.batchSize,
          lingerMs: this.config.batchLingerMs,
          debloatTargetMs: this.config.debloatTargetMs ?? 0,
          ...(this.config.localStateDir ? { localStateDir: this.config.localStateDir } : {}),
          ...(this.config.stateCacheEntries ? { stateCacheEntries: this.config.stateCacheEntries } : {}),
          ...(this.config.tls?.client ? { tls: this.config.tls.client } : {}),
        },
        // After a hot rescale, the job's subtasks here are in several deploys: a local input is a local input.
        (taskId, index) =>
          this.parts.reduce<ReturnType<WorkerJob['inputOf']>>(
            (found, j) => found ?? (j !== job ? j.inputOf(taskId, index) : undefined),
            undefined,
          ),
      );
      if (this.deps.phaseReporter) job.phaseReporter = this.deps.phaseReporter;
      // These subtasks of an earlier deploy are superseded (drained already, normally); the rest of that
      // deploy (other failover regions, after a retry) runs on.
      const keys = new Set(m.tasks.map((t) => subtaskKey(t.taskId, t.subtaskIndex)));
      this.parts = this.parts.filter((j) => {
        if (!j.holdsAny(keys)) return true;
        j.cancel('redeployed', [...keys]);
        return !j.finished;
      });
      this.parts.push(job);
      job.onSnapshot = (id, taskId, index, snap, stats) => void this.writeSnapshot(job, id, taskId, index, snap, stats);
      job.onSnapshotFailed = (id, taskId, index, err) => this.ackSnapshot(job, id, taskId, index, err);
      job.onAlignmentCancelled = (id, by, taskId, index) =>
        this.deps.log.warn(
          { jobId: m.jobId, checkpointId: id, by },
          `subtask ${taskId}#${index} of job ${m.jobId}: barrier ${by} cancelled the alignment of checkpoint ${id}, which was given up upstream`,
        );
      job.onRequestFinalCheckpoint = (taskId, subtaskIndex) =>
        this.deps.send(makeMessage('RequestFinalCheckpoint', { jobId: m.jobId, taskId, subtaskIndex }));
      const listenings = job.prepare(this.config.peerUpdateTimeoutMs);
      restoring = true;
      await job.loadRestoreState();
      restoring = false;
      for (const l of listenings) this.deps.send(makeMessage('SubtaskListening', l));
    } catch (err) {
      this.deps.log.error({ err, jobId: m.jobId }, `deploy of job ${m.jobId} failed: ${(err as Error).message}`);
      for (const t of m.tasks) {
        this.report(
          makeMessage('SubtaskFinished', {
            jobId: m.jobId,
            taskId: t.taskId,
            subtaskIndex: t.subtaskIndex,
            ok: false,
            error: (err as Error).message,
            fatal: !restoring,
          }),
        );
      }
    }
  }

  /**
   * Write a subtask's snapshot under the job's checkpoint directory, then ack it. Of a checkpoint aborted
   * meanwhile nothing is left behind: the coordinator removed its directory, and a write that ends after
   * that removes what it wrote (a full disk keeps none of it).
   */
  private async writeSnapshot(
    job: WorkerJob,
    checkpointId: number,
    taskId: string,
    index: number,
    snap: SubtaskSnapshot,
    stats: SnapshotStats,
  ): Promise<void> {
    this.pendingWrites++;
    let written: WrittenStateFile | undefined;
    let error: unknown;
    const base = job.savepointDirs.get(checkpointId) ?? jobStateDir(job.deploy.checkpoint, job.jobId);
    const dir = checkpointStateDir(base, checkpointId);
    try {
      if (this.aborted.has(checkpointId)) throw new Error(`checkpoint ${checkpointId} was aborted`);
      await makeDirectory(dir);
      written = await writeStateFile(subtaskStateFile(dir, subtaskKey(taskId, index)), snap);
      if (this.aborted.has(checkpointId))
        await removeAbortedState(dir, subtaskStateFile(dir, subtaskKey(taskId, index)));
    } catch (err) {
      error = err ?? new Error('state file write failed');
      if (this.aborted.has(checkpointId)) await removeAbortedState(dir);
    } finally {
      this.pendingWrites--;
    }
    this.ackSnapshot(job, checkpointId, taskId, index, error, written, stats);
  }

  /** SubtaskCheckpointed: the subtask's state is durable (`error` undefined), or the checkpoint must abort. */
  private ackSnapshot(
    job: WorkerJob,
    checkpointId: number,
    taskId: string,
    index: number,
    error: unknown,
    written?: WrittenStateFile,
    stats?: SnapshotStats,
  ): void {
    const ok = error === undefined;
    this.report(
      makeMessage('SubtaskCheckpointed', {
        jobId: job.jobId,
        checkpointId,
        taskId,
        subtaskIndex: index,
        ok,
        error: ok ? '' : ((error as Error)?.message ?? String(error)),
        stateBytes: written?.bytes ?? 0,
        alignmentMs: Math.round(stats?.alignmentMs ?? 0),
        stateSha256: written?.sha256 ?? '',
        commits: stats?.commits ?? false,
        unaligned: stats?.unaligned ?? false,
        inflightBytes: stats?.inflightBytes ?? 0,
        startDelayMs: this.startDelay(checkpointId, stats),
        // State that cannot be encoded fails the same way every time; storage may recover.
        fatal: !ok && error instanceof ClinkError && error.code === 'CLINK_ERR_STATE',
      }),
    );
  }

  /** From the TriggerCheckpoint's arrival here to the subtask's first barrier (both on performance.now). */
  private startDelay(checkpointId: number, stats: SnapshotStats | undefined): number {
    const at = this.triggeredAt.get(checkpointId);
    return at === undefined || stats === undefined ? 0 : Math.max(0, Math.round(stats.barrierAt - at));
  }

  private reportFinished(job: WorkerJob, r: SubtaskReport): void {
    if (job.finished) this.parts = this.parts.filter((j) => j !== job);
    this.report(makeMessage('SubtaskFinished', { jobId: job.jobId, ...r }));
  }

  /** Send a subtask's end or a checkpoint ack; the last of them says the job is done here. */
  private report(m: Message): void {
    this.deps.send(m);
    if (this.finished) this.deps.onFinished?.();
  }

  /** Records read by this job's source subtasks here and written by its sink subtasks, so far, and each running subtask's counts. */
  progress(): JobProgressReport {
    const total: JobProgressReport = { sourceRecords: 0, sinkRecords: 0, subtasks: [] };
    for (const j of this.parts) {
      const p = j.progress();
      total.sourceRecords += p.sourceRecords;
      total.sinkRecords += p.sinkRecords;
      for (const s of p.subtasks) total.subtasks.push(s);
    }
    return total;
  }

  /** How a report names a subtask: its chain of operators, its index, and its key. */
  describeSubtask(taskId: string, index: number): string {
    const task = this.parts.map((j) => j.plan.tasks.find((t) => t.id === taskId)).find((t) => t !== undefined);
    return task
      ? `'${task.name}' (${index + 1}/${task.parallelism}, ${subtaskKey(taskId, index)})`
      : subtaskKey(taskId, index);
  }

  /** Whether any subtask here is still running. */
  get running(): boolean {
    return this.parts.some((j) => !j.finished);
  }

  /** Stop every subtask (the session ended). */
  cancelAll(reason: string): void {
    this.cutover = undefined;
    for (const j of this.parts) j.cancel(reason);
  }
}
