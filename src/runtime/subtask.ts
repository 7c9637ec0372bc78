/**
 * Building one subtask of a plan: its chained operators, its RecordWriter and its runner. Shared by the
 * local runtime (every subtask in one process) and a worker (its own subtasks, some peers remote), so
 * both run exactly the same code. Where a downstream subtask lives is the caller's business: it hands
 * each output a ChannelSink, an InputQueue in this process or a socket to another.
 */
import type { EdgeSpec, PhysicalPlan, TaskSpec } from '../plan/index.js';
import type { OperatorFunctions, SourceContext } from '../sdk/index.js';
import type { StreamElement } from './elements.js';
import { createOperator, createSourceReader, type ConnectorRegistry } from './factory.js';
import { ChainedOutput, type OperatorContext, type RuntimeServices } from './operator.js';
import { InputQueue } from './queue.js';
import { SubtaskRunner, type SubtaskPhaseCode, type SubtaskSetup } from './task.js';
import { SinkOperator } from './operators/basic.js';
import { ProcessingTimeService } from './timers.js';
import { RecordWriter, type EdgeOutput } from './writer.js';

/** Where a task's records go: a queue in this process, or a connection to another. */
export interface ChannelSink {
  push(element: StreamElement): void;
  readonly isFull: boolean;
  waitNotFull(): Promise<void>;
}

/** One input channel of a subtask: which edge and which upstream subtask feed it. */
export interface InputChannel {
  edgeIndex: number;
  upstreamSubtask: number;
  inputIndex: number;
}

/** The task holding an operator. */
export function taskOf(plan: PhysicalPlan, operatorId: string): TaskSpec {
  return plan.tasks.find((t) => t.id === plan.taskOfOperator.get(operatorId))!;
}

/** Network edges (not chained ones), with their index in `spec.edges`. */
export function networkEdges(plan: PhysicalPlan): { edge: EdgeSpec; edgeIndex: number; up: TaskSpec; down: TaskSpec }[] {
  return plan.spec.edges
    .map((edge, edgeIndex) => ({ edge, edgeIndex, up: taskOf(plan, edge.source), down: taskOf(plan, edge.target) }))
    .filter((e) => e.up !== e.down);
}

/**
 * The input channels of every subtask of `task`, in channel-number order: by edge (spec order), then by
 * upstream subtask. Both ends of a channel compute this from the plan, so they agree on its number.
 */
export function inputChannels(plan: PhysicalPlan, task: TaskSpec): InputChannel[] {
  const out: InputChannel[] = [];
  for (const { edge, edgeIndex, up, down } of networkEdges(plan)) {
    if (down !== task) continue;
    for (let u = 0; u < up.parallelism; u++) out.push({ edgeIndex, upstreamSubtask: u, inputIndex: edge.inputIndex });
  }
  return out;
}

/**
 * The job's failover regions: the sets of subtasks joined by data channels, directly or through others.
 * A region is the smallest unit that can be re-run from the beginning without cutting a live channel:
 * a job whose operators all chain into one task has one region per subtask; an edge between two tasks
 * joins every subtask of both (each downstream subtask has a channel from every upstream one).
 * Regions are listed in the order of their first subtask in `plan.subtasks`; each lists `<task>#<index>`.
 */
export function failoverRegions(plan: PhysicalPlan): string[][] {
  const keys = plan.subtasks.map((s) => `${s.taskId}#${s.index}`);
  const parent = new Map(keys.map((k) => [k, k]));
  const find = (k: string): string => {
    let r = k;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(k, r);
    return r;
  };
  const union = (a: string, b: string): void => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(rb, ra);
  };
  for (const task of plan.tasks) {
    // Every subtask of a task has the same input channels: each joins its upstream subtask to all of them.
    const ups = inputChannels(plan, task).map((c) => `${taskOf(plan, plan.spec.edges[c.edgeIndex]!.source).id}#${c.upstreamSubtask}`);
    for (let d = 0; d < task.parallelism; d++) for (const up of ups) union(up, `${task.id}#${d}`);
  }
  const regions = new Map<string, string[]>();
  for (const k of keys) {
    const r = find(k);
    (regions.get(r) ?? regions.set(r, []).get(r)!).push(k);
  }
  return [...regions.values()];
}

/** The channel number of (edge, upstream subtask) at any subtask of the edge's downstream task. */
export function channelNumber(plan: PhysicalPlan, edgeIndex: number, upstreamSubtask: number): number {
  const down = taskOf(plan, plan.spec.edges[edgeIndex]!.target);
  const i = inputChannels(plan, down).findIndex((c) => c.edgeIndex === edgeIndex && c.upstreamSubtask === upstreamSubtask);
  if (i < 0) throw new Error(`no channel for edge ${edgeIndex} from subtask ${upstreamSubtask}`);
  return i;
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
  /** A timer callback failed: fail the job. */
  onAsyncError(err: unknown): void;
  /**
   * For a job with durable checkpoints: a source subtask at the end of its input asks for the job's
   * final checkpoint id, and sinks commit their tail when that checkpoint completes.
   */
  finalCheckpoint?: (taskId: string, subtaskIndex: number) => Promise<number>;
  /** Told what each subtask starts doing (a job thread's stall watchdog reads it). */
  onPhase?: (taskId: string, subtaskIndex: number, phase: SubtaskPhaseCode) => void;
}

/**
 * Build subtask `index` of `task`. `input` is its queue (not for sources); `sinkFor` gives the sink
 * of each output edge's downstream subtask.
 */
export function buildSubtask(
  env: SubtaskEnvironment,
  task: TaskSpec,
  index: number,
  input: InputQueue | undefined,
  sinkFor: (edgeIndex: number, downstreamSubtask: number) => ChannelSink,
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
  }));
  const operators = contexts.map((ctx) => createOperator(ctx, env.registry, env.validated.get(ctx.spec.id)));
  const edgeOutputs: EdgeOutput[] = task.outputs.map((edge) => {
    const edgeIndex = plan.spec.edges.indexOf(edge);
    const down = taskOf(plan, edge.target);
    const channel = channelNumber(plan, edgeIndex, index);
    return {
      kind: edge.kind,
      targets: Array.from({ length: down.parallelism }, (_, d) => {
        const sink = sinkFor(edgeIndex, d);
        // A queue in this process is written through this channel's view of it (its alignment bound).
        return { queue: sink instanceof InputQueue ? sink.channel(channel) : sink, channel };
      }),
      target: plan.spec.operators.find((o) => o.id === edge.target)!,
      maxParallelism: plan.spec.maxParallelism,
      ...(edge.kind === 'HASH' ? { keySelector: functions.get(edge.target)!.keySelectors![edge.inputIndex]! } : {}),
    };
  });
  const writer = (writerRef.writer = new RecordWriter(edgeOutputs, env.batchSize, index, task.parallelism, env.lingerMs ?? 0, (at, cb) => time.schedule(at, cb)));
  operators.forEach((op, i) => op.setup(contexts[i]!, i + 1 < operators.length ? new ChainedOutput(operators[i + 1]!) : writer));
  const head = task.operators[0]!;
  const onPhase = env.onPhase;
  const common = {
    task,
    index,
    operators,
    writer,
    time,
    signal: env.signal,
    batchSize: env.batchSize,
    ...checkpoints,
    ...(onPhase ? { onPhase: (p: SubtaskPhaseCode) => onPhase(task.id, index, p) } : {}),
  };
  const finalCheckpoint = env.finalCheckpoint;
  if (finalCheckpoint) for (const op of operators) if (op instanceof SinkOperator) op.commitThroughFinalCheckpoint = true;
  if (head.type === 'source') {
    const sourceCtx: SourceContext = { operatorName: head.name, subtaskIndex: index, parallelism: task.parallelism, signal: env.signal };
    return new SubtaskRunner({
      ...common,
      ...(finalCheckpoint ? { finalCheckpoint: () => finalCheckpoint(task.id, index) } : {}),
      createReader: () => createSourceReader(head, functions.get(head.id) ?? {}, env.registry, env.validated.get(head.id), sourceCtx),
    });
  }
  return new SubtaskRunner({ ...common, input: { queue: input!, channelInputs: inputChannels(plan, task).map((c) => c.inputIndex) } });
}
