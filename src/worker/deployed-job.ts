/**
 * One job on a worker: its module, its rebuilt plan, and the subtasks deployed here. Subtasks are built
 * on Deploy (inputs registered, ports reported) and started on PeerUpdate, when every peer is known.
 */
import { setMaxListeners } from 'node:events';
import { builtinConnectors } from '../connectors/index.js';
import { ClinkError, JobCancelledError, markFatal } from '../errors.js';
import type { DataPlane } from '../dataplane/index.js';
import { helloMac, type RemoteChannel } from '../dataplane/index.js';
import type { TlsClientConfig } from '../net/index.js';
import {
  createPhysicalPlan,
  failoverRegions,
  inputChannels,
  subtaskKey,
  taskOf,
  type InputChannel,
  type PhysicalPlan,
  type TaskSpec,
} from '../plan/index.js';
import type { MessageOf, SubtaskProgressReport } from '../protocol/index.js';
import {
  buildSubtask,
  DEFAULT_BATCH_SIZE,
  DEFAULT_QUEUE_CAPACITY_BATCHES,
  InputQueue,
  initialBatchLimit,
  validateConnectors,
  type ChannelSink,
  type LocalInput,
  type SubtaskEnvironment,
  type SubtaskPhaseCode,
  type SubtaskRunner,
  type RestoreSnapshot,
  type SubtaskSnapshot,
  type SnapshotStats,
} from '../runtime/index.js';
import type { BuiltJob } from '../sdk/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { setTimer } from '../util/index.js';
import { localStateRoot } from '../state/index.js';
import { loadRestoreState } from './restore-state.js';
import { subtaskReport, type SubtaskReport } from './subtask-report.js';

/** Checkpoints a deploy not yet started keeps for its start (DeployedJob.triggerCheckpoint). */
const MAX_DEFERRED_CHECKPOINTS = 4;
export type { SubtaskReport } from './subtask-report.js';

/** What a job's part on this worker has done so far: its sources' and sinks' totals, and each running subtask. */
export interface JobProgressReport {
  sourceRecords: number;
  sinkRecords: number;
  subtasks: SubtaskProgressReport[];
}

interface DeployedSubtask {
  task: TaskSpec;
  index: number;
  queue: InputQueue | undefined;
  /** State to resume from (read from the checkpoint the deploy names). */
  restore?: RestoreSnapshot;
  runner?: SubtaskRunner;
  collected: Record<string, unknown[]>;
  /** The first error seen before the subtask was cancelled. */
  error?: Error;
  /** Stopped by CancelJob (or the worker's end): it reports `cancelled`, not an error. */
  cancelled: boolean;
  /** Its failover region: a failure here stops the region's subtasks and no others. */
  region: AbortController;
  /** Its connections to subtasks in other processes. */
  channels: RemoteChannel[];
  /** Its input channels, in its channel numbering (a hot rescale appends to them). */
  inputs: InputChannel[];
  done: boolean;
  /** Replaced by a hot rescale: it ends quietly and leaves the deploy. */
  retired?: boolean;
  /** Settles once it has ended and reported. */
  ended?: Promise<void>;
}

/** Another deploy's subtask input in this process, if it runs here (a hot rescale's new subtasks beside the old deploy). */
export type LocalInputLookup = (taskId: string, index: number) => LocalInput | undefined;

export class WorkerJob {
  readonly plan: PhysicalPlan;
  readonly subtasks: DeployedSubtask[] = [];
  /** One abort signal per failover region deployed here (regions share no channel). */
  private readonly regions = new Map<number, AbortController>();
  private readonly regionOf = new Map<string, number>();
  private started = false;
  /** Checkpoints asked for before the subtasks started (triggerCheckpoint), by id: unaligned or not. */
  private readonly deferredCheckpoints = new Map<number, boolean>();
  private peerTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly deploy: MessageOf<'Deploy'>,
    readonly built: BuiltJob,
    private readonly data: DataPlane,
    private readonly stdout: (text: string) => void | Promise<void>,
    private readonly report: (r: SubtaskReport) => void,
    private readonly metrics?: ClinkMetrics,
    private readonly batching: {
      batchSize: number;
      lingerMs: number;
      debloatTargetMs?: number;
      /** Where subtasks on the disk state backend keep their stores. @default localStateRoot's */
      localStateDir?: string;
      /** Decoded values the disk state backend caches per state and subtask. @default DEFAULT_DISK_CACHE_ENTRIES */
      stateCacheEntries?: number;
      tls?: TlsClientConfig;
    } = {
      batchSize: DEFAULT_BATCH_SIZE,
      lingerMs: 0,
    },
    /** Subtask inputs of the job's other deploys here. */
    private readonly elsewhere: LocalInputLookup = () => undefined,
  ) {
    this.plan = createPhysicalPlan(built.spec);
    failoverRegions(this.plan).forEach((keys, i) => keys.forEach((k) => this.regionOf.set(k, i)));
  }

  private regionController(taskId: string, index: number): AbortController {
    const r = this.regionOf.get(subtaskKey(taskId, index))!;
    let c = this.regions.get(r);
    if (!c) {
      c = new AbortController();
      // Every subtask of the region waits on this signal (one listener per pending wait, removed when it settles).
      setMaxListeners(0, c.signal);
      this.regions.set(r, c);
    }
    return c;
  }

  /** Whether this deploy has been given its peers (PeerUpdate) yet. */
  get isStarted(): boolean {
    return this.started;
  }

  /** Whether it runs any of these subtasks (`<task>#<index>`). */
  holdsAny(keys: ReadonlySet<string>): boolean {
    return this.subtasks.some((s) => !s.retired && keys.has(subtaskKey(s.task.id, s.index)));
  }

  get jobId(): string {
    return this.deploy.jobId;
  }

  get attempt(): number {
    return this.deploy.tasks[0]?.attempt ?? 0;
  }

  /** Register each deployed subtask's input and return the SubtaskListening of each. */
  prepare(peerUpdateTimeoutMs: number): Omit<MessageOf<'SubtaskListening'>, 'type'>[] {
    const listenings: Omit<MessageOf<'SubtaskListening'>, 'type'>[] = [];
    for (const t of this.deploy.tasks) {
      const task = this.plan.tasks.find((x) => x.id === t.taskId);
      if (!task)
        throw new ClinkError('CLINK_ERR_PLAN', `deploy names task '${t.taskId}', which the job's plan does not have`);
      const channels = inputChannels(this.plan, task);
      const queue =
        channels.length > 0
          ? new InputQueue(
              DEFAULT_QUEUE_CAPACITY_BATCHES,
              initialBatchLimit(this.batching.debloatTargetMs ?? 0, this.batching.batchSize),
            )
          : undefined;
      const st: DeployedSubtask = {
        task,
        index: t.subtaskIndex,
        queue,
        collected: {},
        cancelled: false,
        region: this.regionController(task.id, t.subtaskIndex),
        channels: [],
        inputs: channels,
        done: false,
      };
      this.subtasks.push(st);
      if (queue) {
        this.data.register(this.jobId, this.attempt, task.id, t.subtaskIndex, {
          ...this.localInput(st)!,
          ...(this.deploy.dataSecret ? { secret: this.deploy.dataSecret } : {}),
        });
      }
      listenings.push({
        jobId: this.jobId,
        taskId: task.id,
        subtaskIndex: t.subtaskIndex,
        edgePorts: channels.map((c) => ({
          inputIndex: c.inputIndex,
          upstreamTaskId: taskOf(this.plan, this.plan.spec.edges[c.edgeIndex]!.source).id,
          upstreamSubtask: c.upstreamSubtask,
          port: this.data.port,
        })),
        dataLinks: this.data.takesLinks,
      });
    }
    this.peerTimer = setTimer(() => {
      this.failAll(
        new ClinkError('CLINK_ERR_CANCELLED', `no PeerUpdate within ${peerUpdateTimeoutMs} ms (peer_update_timeout)`),
      );
    }, peerUpdateTimeoutMs);
    return listenings;
  }

  /** A subtask's input as its writers in this process (and the data server) see it. */
  localInput(st: DeployedSubtask): LocalInput | undefined {
    if (!st.queue || st.done) return undefined;
    return {
      queue: st.queue,
      channelOf: (edgeIndex, u) => {
        const i = st.inputs.findIndex((c) => c.edgeIndex === edgeIndex && c.upstreamSubtask === u);
        return i < 0 ? undefined : i;
      },
    };
  }

  /** The input of subtask `index` of `taskId` if it runs in this deploy. */
  inputOf(taskId: string, index: number): LocalInput | undefined {
    const st = this.subtasks.find((s) => s.task.id === taskId && s.index === index);
    return st ? this.localInput(st) : undefined;
  }

  /**
   * Where `st` sends edge `edgeIndex`'s records for downstream subtask `d` of `plan` (the deploy's, or
   * a hot rescale's next one): that subtask's queue when it runs in this process, else a connection.
   */
  sinkTo(
    st: DeployedSubtask,
    plan: PhysicalPlan,
    peers: MessageOf<'PeerUpdate'>['subtasks'][number]['peers'],
    edgeIndex: number,
    d: number,
  ): ChannelSink | LocalInput {
    const edge = plan.spec.edges[edgeIndex]!;
    const down = taskOf(plan, edge.target);
    const here = this.inputOf(down.id, d) ?? this.elsewhere(down.id, d);
    if (here) return here; // same process: a pointer pass
    const peer = peers.find((p) => p.downstreamTaskId === down.id && p.downstreamSubtask === d);
    if (!peer) throw new ClinkError('CLINK_ERR_PLAN', `PeerUpdate gives no address for ${down.id}#${d}`);
    const fields = {
      jobId: this.jobId,
      attempt: this.attempt,
      edgeIndex,
      upstreamSubtask: st.index,
      downstreamTaskId: down.id,
      downstreamSubtask: d,
      upstreamTaskId: st.task.id,
    };
    const ch = this.data.open({
      host: peer.host,
      port: peer.port,
      link: peer.link,
      hello: { ...fields, mac: this.deploy.dataSecret ? helloMac(this.deploy.dataSecret, fields) : '' },
      onError: (err) => this.fail(st, err),
      ...(this.metrics ? { metrics: this.metrics } : {}),
      labels: {
        job: this.jobId,
        edge: String(edgeIndex),
        from: subtaskKey(st.task.id, st.index),
        to: subtaskKey(down.id, d),
      },
      ...(this.batching.tls ? { tls: this.batching.tls } : {}),
    });
    st.channels.push(ch);
    return ch;
  }

  /** Every peer is known: connect outputs and run the subtasks. */
  start(update: MessageOf<'PeerUpdate'>): void {
    clearTimeout(this.peerTimer);
    this.started = true;
    const registry = builtinConnectors(this.stdout);
    let validated: ReturnType<typeof validateConnectors>;
    try {
      validated = validateConnectors(this.plan.spec.operators, this.built.functions, registry);
    } catch (err) {
      // An unknown connector or bad options: every subtask here fails with it, fatally; the session is untouched.
      this.stop(this.subtasks, markFatal(err as Error));
      return;
    }
    for (const st of this.subtasks) {
      if (st.done) continue;
      const env: SubtaskEnvironment = {
        plan: this.plan,
        functions: this.built.functions,
        registry,
        validated,
        signal: st.region.signal,
        batchSize: this.batching.batchSize,
        lingerMs: this.batching.lingerMs,
        debloatTargetMs: this.batching.debloatTargetMs ?? 0,
        // A deploy from a coordinator older than state backend types says 'default': the heap.
        ...(this.deploy.checkpoint.stateBackendType === 'disk'
          ? {
              diskState: {
                localDir: localStateRoot(this.batching.localStateDir),
                ...(this.batching.stateCacheEntries ? { cacheEntries: this.batching.stateCacheEntries } : {}),
              },
            }
          : {}),
        onAsyncError: (err) => this.fail(st, err as Error),
        ...(this.phaseReporter ? { phaseReporter: this.phaseReporter } : {}),
        ...(this.deploy.checkpoint.checkpointDir && this.onRequestFinalCheckpoint
          ? { finalCheckpoint: (taskId, index) => this.requestFinalCheckpoint(taskId, index) }
          : {}),
        services: {
          stdout: this.stdout,
          collect: (name, values) => {
            const arr = (st.collected[name] ??= []);
            for (const v of values) arr.push(v);
          },
        },
      };
      const peers = update.subtasks.find((p) => p.taskId === st.task.id && p.subtaskIndex === st.index)?.peers ?? [];
      const sinks = new Map<string, ChannelSink | LocalInput>();
      const sinkFor = (edgeIndex: number, d: number): ChannelSink | LocalInput => {
        const k = `${edgeIndex}:${d}`;
        return sinks.get(k) ?? sinks.set(k, this.sinkTo(st, this.plan, peers, edgeIndex, d)).get(k)!;
      };
      try {
        st.runner = buildSubtask(env, st.task, st.index, st.queue, sinkFor, {
          ...(st.restore ? { restore: st.restore } : {}),
          onSnapshot: (id, snap, stats) => this.onSnapshot?.(id, st.task.id, st.index, snap, stats),
          onSnapshotFailed: (id, err) => this.onSnapshotFailed?.(id, st.task.id, st.index, err),
          onAlignmentCancelled: (id, by) => {
            this.metrics?.alignmentsCancelled.inc();
            this.onAlignmentCancelled?.(id, by, st.task.id, st.index);
          },
        });
      } catch (err) {
        this.fail(st, markFatal(err as Error));
        this.finish(st);
        continue;
      }
      st.ended = st.runner.run().then(
        () => this.finish(st),
        (err: unknown) => {
          this.fail(st, err as Error);
          this.finish(st);
        },
      );
    }
    for (const [id, unaligned] of this.deferredCheckpoints)
      for (const st of this.subtasks) if (st.runner && !st.done) st.runner.triggerCheckpoint(id, unaligned);
    this.deferredCheckpoints.clear();
  }

  /** A hot rescale replaces `st`: it ends quietly from its gate and leaves this deploy. Resolves once it has reported. */
  retire(st: DeployedSubtask): Promise<void> {
    st.retired = true;
    st.runner!.cutover.release('retire');
    return st.ended ?? Promise.resolve();
  }

  /** A subtask failed: remember its error (unless it was cancelled first) and stop its region here. */
  private fail(st: DeployedSubtask, err: Error): void {
    if (!st.cancelled && !st.error && !(err instanceof JobCancelledError)) st.error = err;
    if (!st.region.signal.aborted) st.region.abort(err);
    for (const s of this.subtasks) if (s.region === st.region) s.queue?.fail(err);
  }

  private failAll(err: Error): void {
    this.stop(this.subtasks, err);
  }

  private stop(subtasks: DeployedSubtask[], err: Error, cancelled = false): void {
    for (const st of subtasks) {
      if (cancelled) st.cancelled = true;
      this.fail(st, err);
      if (!st.runner) this.finish(st);
    }
  }

  private finish(st: DeployedSubtask): void {
    if (st.done) return;
    st.done = true;
    // Replaced by a hot rescale: it leaves this deploy (checkpoints and progress no longer count it).
    if (st.retired) this.subtasks.splice(this.subtasks.indexOf(st), 1);
    if (st.queue) this.data.unregister(this.jobId, this.attempt, st.task.id, st.index);
    // A subtask that did not end cleanly leaves its peers no END: cut its connections so they see why.
    if (st.error || st.cancelled) for (const ch of st.channels) ch.destroy();
    this.report(subtaskReport(st));
    if (this.subtasks.every((s) => s.done)) this.close();
  }

  /** Where each savepoint's state goes, by checkpoint id (checkpoints go under the job's checkpoint dir). */
  readonly savepointDirs = new Map<number, string>();

  /** Receives each subtask's snapshot of a checkpoint (the worker writes it and acks). */
  onSnapshot?: (
    checkpointId: number,
    taskId: string,
    index: number,
    snapshot: SubtaskSnapshot,
    stats: SnapshotStats,
  ) => void;
  /** A subtask could not snapshot its state: the worker acks the checkpoint as failed. */
  onSnapshotFailed?: (checkpointId: number, taskId: string, index: number, error: unknown) => void;
  /** Gives each subtask, once, what it tells what it starts doing (a job thread's stall watchdog reads it). */
  phaseReporter?: (taskId: string, subtaskIndex: number) => (phase: SubtaskPhaseCode) => void;
  /** A newer barrier cancelled a subtask's alignment of checkpoint `id` (the worker logs it). */
  onAlignmentCancelled?: (checkpointId: number, by: number, taskId: string, index: number) => void;
  /** A source subtask here reached its end: the worker sends RequestFinalCheckpoint. */
  onRequestFinalCheckpoint?: (taskId: string, index: number) => void;

  /** The job-wide final checkpoint id, once FinalCheckpointAssigned brings it. */
  private finalId: { promise: Promise<number>; resolve: (id: number) => void } | undefined;

  private finalCheckpointId(): { promise: Promise<number>; resolve: (id: number) => void } {
    if (!this.finalId) {
      let resolve!: (id: number) => void;
      const promise = new Promise<number>((r) => (resolve = r));
      this.finalId = { promise, resolve };
    }
    return this.finalId;
  }

  private requestFinalCheckpoint(taskId: string, index: number): Promise<number> {
    this.onRequestFinalCheckpoint?.(taskId, index);
    return this.finalCheckpointId().promise;
  }

  /** FinalCheckpointAssigned: every source here that asked sends this checkpoint's barrier, then ends. */
  assignFinalCheckpoint(checkpointId: number): void {
    this.finalCheckpointId().resolve(checkpointId);
  }

  /** AbortCheckpoint: a sink waiting on it as the final checkpoint fails; one deferred to the start is dropped. */
  notifyCheckpointAborted(checkpointId: number, reason: string): void {
    this.deferredCheckpoints.delete(checkpointId);
    for (const s of this.subtasks) if (s.runner && !s.done) s.runner.notifyCheckpointAborted(checkpointId, reason);
  }

  /** Load each deployed subtask's state from the checkpoint directory the deploy names. */
  loadRestoreState(): Promise<void> {
    return loadRestoreState(this.deploy, this.subtasks);
  }

  /** Whether TriggerCheckpoint can be taken part in: every subtask here runs. */
  get checkpointable(): boolean {
    return this.subtasks.every((s) => s.runner && !s.done);
  }

  /** Deployed, waiting for its peers (PeerUpdate): a checkpoint asked for now is taken part in as it starts. */
  get starting(): boolean {
    return !this.started && !this.subtasks.some((s) => s.done);
  }

  /**
   * TriggerCheckpoint: every subtask here takes part (sources inject barriers, the rest align); before
   * they start, as they do (a source's barrier then goes ahead of its first record), unless the
   * checkpoint is aborted first (its timeout bounds the wait, as the reference's trigger does).
   */
  triggerCheckpoint(checkpointId: number, unaligned: boolean): void {
    if (!this.started) {
      this.deferredCheckpoints.set(checkpointId, unaligned);
      // The coordinator runs one checkpoint at a time: more than a few waiting here were given up.
      for (const id of this.deferredCheckpoints.keys())
        if (this.deferredCheckpoints.size > MAX_DEFERRED_CHECKPOINTS) this.deferredCheckpoints.delete(id);
      return;
    }
    for (const s of this.subtasks) s.runner!.triggerCheckpoint(checkpointId, unaligned);
  }

  /** ConvertCheckpoint: the aligned checkpoint becomes unaligned, here too (SubtaskRunner.convertCheckpoint). */
  convertCheckpoint(checkpointId: number): void {
    if (this.deferredCheckpoints.has(checkpointId)) this.deferredCheckpoints.set(checkpointId, true);
    for (const s of this.subtasks) if (s.runner && !s.done) s.runner.convertCheckpoint(checkpointId);
  }

  /**
   * CommitCheckpoint: the second commit phase, subtask by subtask, in order. Returns the subtasks that
   * committed. One whose commit throws fails: a restore from this checkpoint commits it again.
   */
  async notifyCheckpointComplete(checkpointId: number): Promise<{ committed: string[]; errors: string[] }> {
    const committed: string[] = [];
    const errors: string[] = [];
    for (const s of this.subtasks) {
      if (!s.runner || s.done) continue;
      const key = subtaskKey(s.task.id, s.index);
      try {
        await s.runner.notifyCheckpointComplete(checkpointId);
        committed.push(key);
      } catch (err) {
        const failure = new ClinkError(
          'CLINK_ERR_CONNECTOR',
          `subtask ${key} could not commit checkpoint ${checkpointId}: ${(err as Error).message}`,
          { cause: err },
        );
        errors.push(failure.message);
        this.fail(s, failure);
      }
    }
    return { committed, errors };
  }

  /**
   * CancelJob: stop every subtask, or (a retry) those named and the rest of their failover regions;
   * errors from here on are the cancel's, not reported.
   */
  cancel(reason: string, only: readonly string[] = []): void {
    const regions = new Set(only.map((k) => this.regionOf.get(k)));
    const targets =
      only.length === 0
        ? this.subtasks
        : this.subtasks.filter((s) => regions.has(this.regionOf.get(subtaskKey(s.task.id, s.index))));
    this.stop(targets, new JobCancelledError(`job ${this.jobId} cancelled: ${reason}`), true);
  }

  get finished(): boolean {
    return this.subtasks.every((s) => s.done);
  }

  /** Records read by this worker's source subtasks and written by its sink subtasks, so far, and each running subtask's counts. */
  progress(): JobProgressReport {
    let sourceRecords = 0;
    let sinkRecords = 0;
    const subtasks: SubtaskProgressReport[] = [];
    for (const s of this.subtasks) {
      const r = s.runner;
      if (s.task.inputs.length === 0) sourceRecords += r?.recordsIn ?? 0;
      if (s.task.outputs.length === 0) sinkRecords += r?.recordsOut ?? 0;
      if (r && !s.done) {
        subtasks.push({
          jobId: this.jobId,
          taskId: s.task.id,
          subtaskIndex: s.index,
          recordsIn: r.recordsIn,
          recordsOut: r.recordsOut,
          backpressuredMs: Math.round(r.backpressuredMs),
          watermark: r.watermark,
          idleMs: Math.round(r.idleMs),
          lagRecords: r.lag,
          ageMs: Math.round(r.ageMs),
          stateExpired: r.stateExpired,
        });
      }
    }
    return { sourceRecords, sinkRecords, subtasks };
  }

  close(): void {
    clearTimeout(this.peerTimer);
  }
}
