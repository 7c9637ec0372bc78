/**
 * The local runtime: executes a job's physical plan in this process. Every subtask is an async loop on
 * the event loop; tasks exchange batches through bounded InputQueues (pointer passes, no serialisation).
 */
import { once, setMaxListeners } from 'node:events';
import { WORKER_DEFAULTS } from '../config/index.js';
import { ClinkError, JobCancelledError } from '../errors.js';
import { createPhysicalPlan, subtaskKey, taskOf, type PhysicalPlan, type TaskSpec } from '../plan/index.js';
import { builtinConnectors } from '../connectors/index.js';
import { buildJob, type BuildOptions, type BuiltJob, type Connector, type JobDefinition } from '../sdk/index.js';
import type { DiskStateOptions } from '../state/index.js';
import { validateConnectors } from './factory.js';
import type { RuntimeServices } from './operator.js';
import { rescaleInputs, type RestoreSnapshot } from './rescale.js';
import { InputQueue } from './queue.js';
import { initialBatchLimit } from './debloat.js';
import { buildSubtask, type SubtaskEnvironment } from './subtask.js';
import type { SubtaskRunner, SubtaskSnapshot } from './subtask-runner.js';

/** Records per batch between tasks. @default 1000 */
export const DEFAULT_BATCH_SIZE = WORKER_DEFAULTS.batchSize;
/** Batches an input queue holds before its producers wait. @default 8 */
export const DEFAULT_QUEUE_CAPACITY_BATCHES = 8;

export interface LocalRunOptions extends BuildOptions {
  /** @default DEFAULT_BATCH_SIZE */
  batchSize?: number;
  /** @default DEFAULT_QUEUE_CAPACITY_BATCHES */
  queueCapacity?: number;
  /** How long a partly filled batch between tasks may wait to fill. @default 0 */
  lingerMs?: number;
  /** Buffer debloating: each task asks for batches of about this many ms of its work queued. @default 0, off */
  debloatTargetMs?: number;
  signal?: AbortSignal;
  /** Where print() writes; a returned promise holds the printing task back. @default process.stdout */
  stdout?: (text: string) => void | Promise<void>;
  /** Extra connectors by name, in addition to the built-in ones. */
  connectors?: Record<string, Connector>;
  /** Resume from a checkpoint an earlier run of the same plan took. */
  restore?: JobSnapshot;
  /** Keep keyed user state on disk, under this directory (the disk state backend); undefined: on the heap. */
  diskState?: DiskStateOptions;
  /**
   * The clock, in ms, that tasks time their turns on the event loop by (every 10 ms a task lets other
   * work run): a test's, so what it asserts about giving way does not depend on how busy the machine is.
   * @default performance.now
   */
  taskClock?: () => number;
}

/**
 * What subtask `index` of `task` restores from a job snapshot: its own, or when the snapshot holds the
 * task at another parallelism, the earlier subtasks' it reads (runtime/rescale.ts).
 */
function restoreOf(snapshot: JobSnapshot, task: TaskSpec, index: number): RestoreSnapshot {
  const held = Object.keys(snapshot.subtasks).filter((k) => k.startsWith(`${task.id}#`)).length;
  if (held === 0)
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `checkpoint ${snapshot.checkpointId} has no state for task ${task.id}; it was taken of another plan`,
    );
  if (held === task.parallelism) return snapshot.subtasks[subtaskKey(task.id, index)]!;
  const parts = new Map<number, SubtaskSnapshot>();
  for (const i of rescaleInputs(held, task, index)) parts.set(i, snapshot.subtasks[subtaskKey(task.id, i)]!);
  return { rescaledFrom: held, parts };
}

/** A checkpoint of a whole job: every subtask's snapshot, by `<task id>#<subtask index>`. */
export interface JobSnapshot {
  checkpointId: number;
  subtasks: Record<string, SubtaskSnapshot>;
}

export interface TaskMetrics {
  task: string;
  parallelism: number;
  recordsIn: number;
  recordsOut: number;
  /** The most batches any of this task's input queues held at once. */
  queueHighWaterBatches: number;
  queueCapacityBatches: number;
  /** Keyed state values removed as their TTL ran out. */
  stateExpired: number;
  states: string[];
}

export interface JobResult {
  job: string;
  durationMs: number;
  /** Records from each `collect(name)` sink, by name. Order across parallel subtasks is not defined. */
  collected: Record<string, unknown[]>;
  tasks: TaskMetrics[];
}

export class LocalExecution {
  readonly plan: PhysicalPlan;
  private readonly runners: { task: TaskSpec; runner: SubtaskRunner; queue?: InputQueue }[] = [];
  // Every subtask waits on its signal (one listener per pending wait, removed when it settles).
  private readonly controller = ((c: AbortController) => (setMaxListeners(0, c.signal), c))(new AbortController());
  private readonly collected: Record<string, unknown[]> = {};
  private readonly startedAt = performance.now();
  private finishedAt: number | undefined;
  readonly queueCapacity: number;
  /** Settles when every subtask has stopped. */
  readonly done: Promise<JobResult>;

  /** The checkpoint this run resumed from; its own checkpoints number above it. */
  readonly restoredFrom: number | undefined;

  constructor(built: BuiltJob, options: LocalRunOptions = {}) {
    this.plan = createPhysicalPlan(built.spec);
    this.restoredFrom = options.restore?.checkpointId;
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    this.queueCapacity = options.queueCapacity ?? DEFAULT_QUEUE_CAPACITY_BATCHES;
    const stdout = options.stdout ?? writeStdout;
    const registry = builtinConnectors(stdout);
    for (const [name, c] of Object.entries(options.connectors ?? {})) registry.set(name, c);
    const validated = validateConnectors(this.plan.spec.operators, built.functions, registry);
    const services: RuntimeServices = {
      collect: (name, values) => {
        const arr = (this.collected[name] ??= []);
        for (const v of values) arr.push(v);
      },
      stdout,
    };
    const signal = options.signal ? AbortSignal.any([options.signal, this.controller.signal]) : this.controller.signal;

    const env: SubtaskEnvironment = {
      plan: this.plan,
      functions: built.functions,
      registry,
      validated,
      services,
      signal,
      batchSize,
      lingerMs: options.lingerMs ?? 0,
      debloatTargetMs: options.debloatTargetMs ?? 0,
      ...(options.diskState ? { diskState: options.diskState } : {}),
      onAsyncError: (err) => this.fail(err),
      ...(options.taskClock ? { taskClock: options.taskClock } : {}),
    };
    // Every subtask in this process: each has one input queue, and every edge is a pointer pass.
    const queues = new Map(
      this.plan.tasks.map((t) => [
        t.id,
        Array.from(
          { length: t.parallelism },
          () => new InputQueue(this.queueCapacity, initialBatchLimit(options.debloatTargetMs ?? 0, batchSize)),
        ),
      ]),
    );
    for (const task of this.plan.tasks) {
      for (let index = 0; index < task.parallelism; index++) {
        const queue = task.inputs.length > 0 ? queues.get(task.id)![index]! : undefined;
        const key = subtaskKey(task.id, index);
        const restored = options.restore ? restoreOf(options.restore, task, index) : undefined;
        const runner = buildSubtask(
          env,
          task,
          index,
          queue,
          (edgeIndex, d) => queues.get(taskOf(this.plan, this.plan.spec.edges[edgeIndex]!.target).id)![d]!,
          {
            ...(restored ? { restore: restored } : {}),
            onSnapshot: (id, snap) => this.onSnapshot(id, key, snap),
            onSnapshotFailed: (id, err) => this.onSnapshotFailed(id, err),
          },
        );
        this.runners.push({ task, runner, ...(queue ? { queue } : {}) });
      }
    }
    signal.addEventListener('abort', () => this.failQueues(signal.reason), { once: true });
    this.done = this.runAll();
  }

  private firstError: unknown = undefined;
  private checkpointSeq = 0;
  private readonly pendingCheckpoints = new Map<
    number,
    { snapshot: JobSnapshot; resolve: (s: JobSnapshot) => void; reject: (e: unknown) => void; commit: boolean }
  >();

  /**
   * Take a checkpoint: barriers go in at every source, align through the graph, and each subtask
   * snapshots when they reach it. Resolves with the whole job's snapshot once every subtask has taken
   * its part.
   */
  triggerCheckpoint(options: { commit?: boolean; unaligned?: boolean } = {}): Promise<JobSnapshot> {
    const checkpointId = Math.max(++this.checkpointSeq, (this.restoredFrom ?? 0) + 1);
    this.checkpointSeq = checkpointId;
    const p = new Promise<JobSnapshot>((resolve, reject) =>
      this.pendingCheckpoints.set(checkpointId, {
        snapshot: { checkpointId, subtasks: {} },
        resolve,
        reject,
        commit: options.commit ?? true,
      }),
    );
    for (const { runner } of this.runners) runner.triggerCheckpoint(checkpointId, options.unaligned === true);
    return p;
  }

  /**
   * Every checkpoint in flight becomes unaligned, as adaptive alignment converts one past its aligned
   * timeout: its barriers overtake the records ahead of them from here.
   */
  convertCheckpoints(): void {
    for (const id of this.pendingCheckpoints.keys())
      for (const { runner } of this.runners) runner.convertCheckpoint(id);
  }

  private onSnapshot(checkpointId: number, key: string, snap: SubtaskSnapshot): void {
    const pending = this.pendingCheckpoints.get(checkpointId);
    if (!pending) return;
    pending.snapshot.subtasks[key] = snap;
    if (Object.keys(pending.snapshot.subtasks).length === this.runners.length) {
      this.pendingCheckpoints.delete(checkpointId);
      // In one process the snapshot in memory is the checkpoint: it is complete, so commit it (unless a
      // test stops between the two phases).
      if (!pending.commit) {
        pending.resolve(pending.snapshot);
        return;
      }
      void Promise.all(this.runners.map(({ runner }) => runner.notifyCheckpointComplete(checkpointId))).then(
        () => pending.resolve(pending.snapshot),
        (err: unknown) => pending.reject(err),
      );
    }
  }

  private onSnapshotFailed(checkpointId: number, err: unknown): void {
    const pending = this.pendingCheckpoints.get(checkpointId);
    if (!pending) return;
    this.pendingCheckpoints.delete(checkpointId);
    pending.reject(err);
  }

  private fail(err: unknown): void {
    this.firstError ??= err;
    if (!this.controller.signal.aborted) this.controller.abort(err);
  }

  private failQueues(reason: unknown): void {
    for (const r of this.runners) r.queue?.fail(reason);
  }

  private async runAll(): Promise<JobResult> {
    const results = await Promise.allSettled(
      this.runners.map(async ({ runner }) => {
        try {
          await runner.run();
        } catch (err) {
          this.fail(err);
          throw err;
        }
      }),
    );
    this.finishedAt = performance.now();
    for (const [, p] of this.pendingCheckpoints)
      p.reject(this.firstError ?? new JobCancelledError('the job ended before the checkpoint completed'));
    this.pendingCheckpoints.clear();
    if (results.some((r) => r.status === 'rejected')) {
      const err = this.firstError;
      if (err instanceof ClinkError || err instanceof Error) throw err;
      throw new JobCancelledError(`job cancelled: ${String(err)}`);
    }
    return this.result();
  }

  /** Stop the job; `done` rejects with JobCancelledError. */
  cancel(reason = 'cancelled by the caller'): void {
    this.fail(new JobCancelledError(`job '${this.plan.spec.job.name}' ${reason}`));
  }

  get elapsedMs(): number {
    return (this.finishedAt ?? performance.now()) - this.startedAt;
  }

  metrics(): TaskMetrics[] {
    return this.plan.tasks.map((task) => {
      const rs = this.runners.filter((r) => r.task === task);
      return {
        task: task.name,
        parallelism: task.parallelism,
        recordsIn: rs.reduce((n, r) => n + r.runner.recordsIn, 0),
        recordsOut: rs.reduce((n, r) => n + r.runner.recordsOut, 0),
        queueHighWaterBatches: Math.max(0, ...rs.map((r) => r.queue?.highWaterBatches ?? 0)),
        queueCapacityBatches: this.queueCapacity,
        stateExpired: rs.reduce((n, r) => n + r.runner.stateExpired, 0),
        states: rs.map((r) => r.runner.state),
      };
    });
  }

  private result(): JobResult {
    return {
      job: this.plan.spec.job.name,
      durationMs: this.elapsedMs,
      collected: this.collected,
      tasks: this.metrics(),
    };
  }
}

/** Standard output with backpressure: a full pipe holds the print sink until it drains. */
function writeStdout(text: string): void | Promise<void> {
  if (process.stdout.write(text)) return;
  return once(process.stdout, 'drain').then(() => undefined);
}

/** Build a job and start it on the local runtime. */
export function startJob(job: JobDefinition, options: LocalRunOptions = {}): LocalExecution {
  return new LocalExecution(buildJob(job, options), options);
}

/** Build a job, run it to completion on the local runtime, and return what it collected. */
export async function runJob(job: JobDefinition, options: LocalRunOptions = {}): Promise<JobResult> {
  return startJob(job, options).done;
}
