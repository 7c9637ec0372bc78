/**
 * Building one subtask of a plan: its chained operators, its RecordWriter and its runner. Shared by the
 * local runtime (every subtask in one process) and a worker (its own subtasks, some peers remote), so
 * both run exactly the same code. Where a downstream subtask lives is the caller's business: it hands
 * each output a ChannelSink, an InputQueue in this process or a socket to another.
 */
import {
  channelNumber,
  inputChannels,
  taskOf,
  type OperatorSpec,
  type PhysicalPlan,
  type TaskSpec,
} from '../plan/index.js';
import type { OperatorFunctions, SourceContext } from '../sdk/index.js';
import type { DiskStateOptions } from '../state/index.js';
import type { StreamElement } from './elements.js';
import { createOperator, createSourceReader, rescaledSourcePosition, type ConnectorRegistry } from './factory.js';
import { isRescaled, sourcePositions } from './rescale.js';
// Its form is copied into subtask.d.ts, which the SDK fingerprint hashes: keep it `import { type ... }`.
import { type OperatorContext, type RuntimeServices } from './operator.js';
import { chainedOutput } from './chained-output.js';
import { InputQueue } from './queue.js';
import { register as registerAbortFlag } from './abort-flag.js';
import { SubtaskRunner, type SubtaskPhaseCode, type SubtaskSetup } from './subtask-runner.js';
import { SinkOperator } from './operators/basic.js';
import { ProcessingTimeService } from './timers.js';
import { RecordWriter, type EdgeOutput } from './writer.js';

/** Where a task's records go: a queue in this process, or a connection to another. */
export interface ChannelSink {
  push(element: StreamElement): void;
  readonly isFull: boolean;
  waitNotFull(): Promise<void>;
  /** The most records a batch to it should hold, as its receiver asks (buffer debloating); 0 or absent: no limit. */
  readonly batchLimit?: number;
  /** A channel that holds what waits for credit: an aligned barrier of this checkpoint waiting there overtakes it now. */
  overtakeWith?(checkpointId: number): void;
}

/**
 * A subtask's input in this process as its writers see it: its queue, and which of its channels an
 * (edge, upstream subtask) is. After a hot rescale that is not the plan's numbering (new channels go
 * after the old), so a writer asks.
 */
export interface LocalInput {
  queue: InputQueue;
  channelOf(edgeIndex: number, upstreamSubtask: number): number | undefined;
}

/** The target a writer pushes to for `sink`: a local queue through its channel's view, else the sink itself. */
export function channelTarget(
  sink: ChannelSink | LocalInput,
  channel: number,
  edgeIndex: number,
  upstreamSubtask: number,
): { queue: ChannelSink; channel: number } {
  if (sink instanceof InputQueue) return { queue: sink.channel(channel), channel };
  if ('channelOf' in sink) {
    const c = sink.channelOf(edgeIndex, upstreamSubtask);
    if (c === undefined) throw new Error(`no input channel for edge ${edgeIndex} from subtask ${upstreamSubtask}`);
    return { queue: sink.queue.channel(c), channel: c };
  }
  return { queue: sink, channel };
}

export interface SubtaskEnvironment {
  plan: PhysicalPlan;
  functions: ReadonlyMap<string, OperatorFunctions>;
  registry: ConnectorRegistry;
  /** Connector options after validation, by operator id. */
  validated: ReadonlyMap<string, unknown>;
  services: RuntimeServices;
  signal: AbortSignal;
  batchSize: number;
  /** How long a partly filled output batch may wait to fill. @default 0 */
  lingerMs?: number;
  /** Buffer debloating's target: a task asks for batches of about this much of its work queued (debloat.ts). @default 0, off */
  debloatTargetMs?: number;
  /** Keep keyed user state on disk, there (the disk state backend); undefined: on the heap. */
  diskState?: DiskStateOptions;
  /** A timer callback failed: fail the job. */
  onAsyncError(err: unknown): void;
  /**
   * For a job with durable checkpoints: a source subtask at the end of its input asks for the job's
   * final checkpoint id, and sinks commit their tail when that checkpoint completes.
   */
  finalCheckpoint?: (taskId: string, subtaskIndex: number) => Promise<number>;
  /**
   * Gives each subtask, once as it is built, what it tells what it starts doing (a job thread's stall
   * watchdog reads it). Once, because a subtask reports per batch: a key built and looked up per report
   * went with job threads whose scavenges kept 3-4x as much alive in some runs (docs/performance-history.md).
   */
  phaseReporter?: (taskId: string, subtaskIndex: number) => (phase: SubtaskPhaseCode) => void;
  /** The clock tasks time their yields by (a test's, to make giving way deterministic). @default performance.now */
  taskClock?: () => number;
}

const wallClock = (): number => performance.now();

/**
 * Build subtask `index` of `task`. `input` is its queue (not for sources); `sinkFor` gives the sink
 * of each output edge's downstream subtask.
 */
export function buildSubtask(
  env: SubtaskEnvironment,
  task: TaskSpec,
  index: number,
  input: InputQueue | undefined,
  sinkFor: (edgeIndex: number, downstreamSubtask: number) => ChannelSink | LocalInput,
  checkpoints: Pick<SubtaskSetup, 'restore' | 'onSnapshot' | 'onSnapshotFailed' | 'onAlignmentCancelled'> = {},
): SubtaskRunner {
  const { plan, functions } = env;
  const writerRef: { writer?: RecordWriter } = {};
  const time = new ProcessingTimeService(env.onAsyncError, () => writerRef.writer?.flush());
  const contexts: OperatorContext[] = task.operators.map((spec) => ({
    spec,
    fns: functions.get(spec.id) ?? {},
    subtaskIndex: index,
    parallelism: task.parallelism,
    params: plan.spec.params,
    time,
    signal: env.signal,
    services: env.services,
    ...(env.diskState ? { diskState: env.diskState } : {}),
  }));
  const operators = contexts.map((ctx) => createOperator(ctx, env.registry, env.validated.get(ctx.spec.id)));
  const edgeOutputs: EdgeOutput[] = task.outputs.map((edge) => {
    const edgeIndex = plan.spec.edges.indexOf(edge);
    const down = taskOf(plan, edge.target);
    const channel = channelNumber(plan, edgeIndex, index);
    return {
      kind: edge.kind,
      // A queue in this process is written through this channel's view of it (its alignment bound).
      targets: Array.from({ length: down.parallelism }, (_, d) =>
        channelTarget(sinkFor(edgeIndex, d), channel, edgeIndex, index),
      ),
      edgeIndex,
      target: plan.spec.operators.find((o) => o.id === edge.target)!,
      maxParallelism: plan.spec.maxParallelism,
      ...(edge.output ? { output: edge.output } : {}),
      ...(edge.kind === 'HASH' ? { keySelector: functions.get(edge.target)!.keySelectors![edge.inputIndex]! } : {}),
    };
  });
  const writer = (writerRef.writer = new RecordWriter(
    edgeOutputs,
    env.batchSize,
    index,
    task.parallelism,
    env.lingerMs ?? 0,
    (at, cb) => time.schedule(at, cb),
  ));
  operators.forEach((op, i) =>
    op.setup(contexts[i]!, i + 1 < operators.length ? chainedOutput(operators[i + 1]!) : writer),
  );
  const head = task.operators[0]!;
  const setup = new Setup(
    task,
    index,
    operators,
    writer,
    time,
    env.signal,
    env.batchSize,
    checkpoints,
    env.phaseReporter?.(task.id, index),
    env.taskClock ?? wallClock,
  );
  const finalCheckpoint = env.finalCheckpoint;
  if (finalCheckpoint)
    for (const op of operators) if (op instanceof SinkOperator) op.commitThroughFinalCheckpoint = true;
  if (head.type === 'source') {
    const sourceCtx: SourceContext = {
      operatorName: head.name,
      subtaskIndex: index,
      parallelism: task.parallelism,
      signal: env.signal,
    };
    const restore = checkpoints.restore;
    if (restore && isRescaled(restore)) {
      setup.rescaledPosition = () =>
        rescaledSourcePosition(
          head,
          functions.get(head.id) ?? {},
          env.registry,
          env.validated.get(head.id),
          sourcePositions(restore),
          sourceCtx,
        );
    }
    if (finalCheckpoint) setup.finalCheckpoint = () => finalCheckpoint(task.id, index);
    setup.source = {
      head,
      fns: functions.get(head.id) ?? {},
      registry: env.registry,
      validated: env.validated.get(head.id),
      ctx: sourceCtx,
    };
    setup.createReader = readerOf;
  } else {
    setup.input = { queue: input!, channelInputs: inputChannels(plan, task).map((c) => c.inputIndex) };
    setup.debloatTargetMs = env.debloatTargetMs ?? 0;
    setup.inputKeys = functions.get(head.id)?.keySelectors;
  }
  registerAbortFlag(setup);
  return new SubtaskRunner(setup);
}

/**
 * A subtask's setup, every field present (absent ones undefined) and set in one order, so every setup,
 * a source's or not, of every job, has one hidden class. Literals built by spreading per-job parts had
 * one a job: each new job's setups deoptimized the task's batch loop, recompiled on every job a worker
 * ran (issue 24).
 */
class Setup implements SubtaskSetup {
  input: SubtaskSetup['input'] = undefined;
  createReader: SubtaskSetup['createReader'] = undefined;
  /** What readerOf builds a source's reader from. */
  source:
    | {
        head: OperatorSpec;
        fns: OperatorFunctions;
        registry: ConnectorRegistry;
        validated: unknown;
        ctx: SourceContext;
      }
    | undefined = undefined;
  rescaledPosition: SubtaskSetup['rescaledPosition'] = undefined;
  finalCheckpoint: SubtaskSetup['finalCheckpoint'] = undefined;
  inputKeys: SubtaskSetup['inputKeys'] = undefined;
  debloatTargetMs = 0;
  readonly restore: SubtaskSetup['restore'];
  readonly onSnapshot: SubtaskSetup['onSnapshot'];
  readonly onSnapshotFailed: SubtaskSetup['onSnapshotFailed'];
  readonly onAlignmentCancelled: SubtaskSetup['onAlignmentCancelled'];

  constructor(
    readonly task: TaskSpec,
    readonly index: number,
    readonly operators: SubtaskSetup['operators'],
    readonly writer: RecordWriter,
    readonly time: ProcessingTimeService,
    readonly signal: AbortSignal,
    readonly batchSize: number,
    checkpoints: Pick<SubtaskSetup, 'restore' | 'onSnapshot' | 'onSnapshotFailed' | 'onAlignmentCancelled'>,
    readonly onPhase: SubtaskSetup['onPhase'],
    readonly now: SubtaskSetup['now'],
  ) {
    this.restore = checkpoints.restore;
    this.onSnapshot = checkpoints.onSnapshot;
    this.onSnapshotFailed = checkpoints.onSnapshotFailed;
    this.onAlignmentCancelled = checkpoints.onAlignmentCancelled;
  }
}

/**
 * A source's createReader: one function for every setup (it reads the setup it is called on), so the
 * call in the task's loop has one target in every job; a closure per subtask was a new target each job,
 * and the loop was deoptimized for it.
 */
function readerOf(this: Setup): ReturnType<NonNullable<SubtaskSetup['createReader']>> {
  const s = this.source!;
  return createSourceReader(s.head, s.fns, s.registry, s.validated, s.ctx);
}
