/**
 * The topology of a physical plan: which task holds an operator, the network edges between tasks, the
 * numbered input channels of a subtask, and the failover regions. Both ends of a channel, the local
 * runtime, workers and the coordinator compute these from the plan alone, so they agree.
 */
import type { EdgeSpec } from './spec.js';
import type { PhysicalPlan, TaskSpec } from './planner.js';

/** A subtask's key: `<taskId>#<index>`, the one spelling of it everywhere (maps, regions, state files). */
export function subtaskKey(taskId: string, index: number): string {
  return `${taskId}#${index}`;
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
export function networkEdges(
  plan: PhysicalPlan,
): { edge: EdgeSpec; edgeIndex: number; up: TaskSpec; down: TaskSpec }[] {
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
  const keys = plan.subtasks.map((s) => subtaskKey(s.taskId, s.index));
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
    const ups = inputChannels(plan, task).map((c) =>
      subtaskKey(taskOf(plan, plan.spec.edges[c.edgeIndex]!.source).id, c.upstreamSubtask),
    );
    for (let d = 0; d < task.parallelism; d++) for (const up of ups) union(up, subtaskKey(task.id, d));
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
  const i = inputChannels(plan, down).findIndex(
    (c) => c.edgeIndex === edgeIndex && c.upstreamSubtask === upstreamSubtask,
  );
  if (i < 0) throw new Error(`no channel for edge ${edgeIndex} from subtask ${upstreamSubtask}`);
  return i;
}

/**
 * Why a replay from a checkpoint may deliver the records reaching `operatorId` in another order than
 * the run before it, or undefined when it repeats it (given deterministic user functions). A subtask
 * reads one input in order; it merges several channels in whatever order their batches arrive, and a
 * REBALANCE edge deals records out from a position a restore does not keep. Every task upstream counts.
 */
export function replayOrderProblem(plan: PhysicalPlan, operatorId: string): string | undefined {
  const edges = networkEdges(plan);
  const seen = new Set<TaskSpec>();
  const stack = [taskOf(plan, operatorId)];
  while (stack.length > 0) {
    const task = stack.pop()!;
    if (seen.has(task)) continue;
    seen.add(task);
    const inputs = edges.filter((e) => e.down === task);
    let channels = 0;
    for (const { edge, up } of inputs) {
      if (edge.kind === 'REBALANCE' && (up.parallelism > 1 || task.parallelism > 1))
        return `task '${task.name}' is fed by a REBALANCE edge from '${up.name}'`;
      channels += edge.kind === 'FORWARD' ? 1 : up.parallelism;
      stack.push(up);
    }
    if (channels > 1) return `each subtask of task '${task.name}' merges ${channels} input channels`;
  }
  return undefined;
}
