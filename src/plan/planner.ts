/**
 * The planner: validates a JobGraphSpec, chains consecutive forward edges of equal parallelism into one
 * task (operator chaining), and expands tasks into subtasks. The result, PhysicalPlan, is what a runtime
 * executes, on one process or many.
 */
import { PlanError } from '../errors.js';
import { MAX_PARALLELISM } from './keygroups.js';
import { specProblems, type EdgeSpec, type JobGraphSpec, type OperatorSpec } from './spec.js';

/** A chain of operators run as one task: each passes records to the next by a direct call. */
export interface TaskSpec {
  /** The id of the chain's head operator. */
  id: string;
  /** Display name, e.g. `source -> map -> filter`. */
  name: string;
  operators: OperatorSpec[];
  parallelism: number;
  /** Network edges into the head, from other tasks' tails. */
  inputs: EdgeSpec[];
  /** Network edges out of the tail. */
  outputs: EdgeSpec[];
  /** The slot sharing group of its operators (chains never cross groups). */
  slotSharingGroup: string;
}

export const DEFAULT_SLOT_SHARING_GROUP = 'default';

export interface SubtaskId {
  taskId: string;
  index: number;
}

export interface PhysicalPlan {
  spec: JobGraphSpec;
  /** Tasks in topological order (sources first). */
  tasks: TaskSpec[];
  /** Which task holds each operator. */
  taskOfOperator: Map<string, string>;
  subtasks: SubtaskId[];
}

/** A spec's operators and edges, indexed: every edge into and out of each operator, in topological order. */
interface GraphIndex {
  ops: Map<string, OperatorSpec>;
  outEdges: Map<string, EdgeSpec[]>;
  inEdges: Map<string, EdgeSpec[]>;
  order: string[];
  /** Each operator's slot sharing group. */
  groupOf: Map<string, string>;
}

function indexGraph(spec: JobGraphSpec): GraphIndex {
  const ops = new Map(spec.operators.map((o) => [o.id, o]));
  const outEdges = new Map<string, EdgeSpec[]>();
  const inEdges = new Map<string, EdgeSpec[]>();
  for (const o of spec.operators) {
    outEdges.set(o.id, []);
    inEdges.set(o.id, []);
  }
  for (const e of spec.edges) {
    outEdges.get(e.source)!.push(e);
    inEdges.get(e.target)!.push(e);
  }
  const order = topologicalOrder(spec, outEdges, inEdges);
  // As Flink: an operator's own group, else its inputs' when they agree, else the default.
  const groupOf = new Map<string, string>();
  for (const id of order) {
    const op = ops.get(id)!;
    const inputs = new Set(inEdges.get(id)!.map((e) => groupOf.get(e.source)!));
    groupOf.set(id, op.slotSharingGroup ?? (inputs.size === 1 ? [...inputs][0]! : DEFAULT_SLOT_SHARING_GROUP));
  }
  return { ops, outEdges, inEdges, order, groupOf };
}

/**
 * The chaining rule, the one place it is written: an edge chains (its target runs in its source's task,
 * by a direct call) when it is a forward edge between operators of equal parallelism in one slot
 * sharing group, the source's only output and the target's only input, and neither operator refuses.
 */
function chainsWith(g: GraphIndex): (e: EdgeSpec) => boolean {
  return (e) => {
    const up = g.ops.get(e.source)!;
    const down = g.ops.get(e.target)!;
    return (
      e.kind === 'FORWARD' &&
      // A side output is a writer's routing: its consumer starts a task of its own.
      e.output === undefined &&
      g.groupOf.get(up.id) === g.groupOf.get(down.id) &&
      up.parallelism === down.parallelism &&
      g.outEdges.get(up.id)!.length === 1 &&
      g.inEdges.get(down.id)!.length === 1 &&
      up.chaining !== 'NEVER' &&
      down.chaining === 'ALWAYS'
    );
  };
}

/** The chaining rule for `spec`'s edges (see chainsWith), for a spec not yet validated (it must be acyclic). */
export function chainingRule(spec: JobGraphSpec): (e: EdgeSpec) => boolean {
  return chainsWith(indexGraph(spec));
}

/** Validate and chain a spec. Throws PlanError naming the offending operator. */
export function createPhysicalPlan(input: JobGraphSpec): PhysicalPlan {
  const spec = validateSpec(input);
  const g = indexGraph(spec);
  const { ops, outEdges, inEdges, order, groupOf } = g;
  const chainable = chainsWith(g);

  const tasks: TaskSpec[] = [];
  const taskOfOperator = new Map<string, string>();
  for (const id of order) {
    if (taskOfOperator.has(id)) continue;
    const head = ops.get(id)!;
    const chain: OperatorSpec[] = [head];
    let tail = head;
    for (;;) {
      const outs = outEdges.get(tail.id)!;
      if (outs.length !== 1 || !chainable(outs[0]!)) break;
      tail = ops.get(outs[0]!.target)!;
      chain.push(tail);
    }
    for (const op of chain) taskOfOperator.set(op.id, head.id);
    tasks.push({
      id: head.id,
      name: chain.map((o) => o.name).join(' -> '),
      operators: chain,
      parallelism: head.parallelism,
      inputs: inEdges.get(head.id)!,
      outputs: outEdges.get(tail.id)!,
      slotSharingGroup: groupOf.get(head.id)!,
    });
  }
  const subtasks = tasks.flatMap((t) => Array.from({ length: t.parallelism }, (_, index) => ({ taskId: t.id, index })));
  return { spec, tasks, taskOfOperator, subtasks };
}

/** Structural checks beyond the schema. Each message names the operator and the fix. */
export function validateSpec(input: JobGraphSpec): JobGraphSpec {
  const problems = specProblems(input);
  if (problems !== undefined) throw new PlanError(`invalid job graph:\n${problems}`);
  const spec = input;
  const ops = new Map<string, OperatorSpec>();
  for (const o of spec.operators) {
    if (ops.has(o.id)) throw new PlanError(`operator id '${o.id}' is used twice; give each operator a unique uid()`);
    ops.set(o.id, o);
  }
  const inputsSeen = new Map<string, Set<number>>();
  for (const e of spec.edges) {
    const up = ops.get(e.source);
    const down = ops.get(e.target);
    if (!up) throw new PlanError(`edge refers to unknown operator '${e.source}'`);
    if (!down) throw new PlanError(`edge refers to unknown operator '${e.target}'`);
    if (down.type === 'source')
      throw new PlanError(`source '${down.name}' cannot have an input (edge from '${up.name}')`);
    if (up.type === 'sink') throw new PlanError(`sink '${up.name}' cannot have an output (edge to '${down.name}')`);
    if (e.kind === 'FORWARD' && up.parallelism !== down.parallelism) {
      throw new PlanError(
        `forward edge from '${up.name}' (parallelism ${up.parallelism}) to '${down.name}' (parallelism ${down.parallelism}) ` +
          `needs equal parallelism; use rebalance() or set the same parallelism`,
      );
    }
    if (down.keyed && e.kind !== 'HASH') {
      throw new PlanError(
        `keyed operator '${down.name}' must be fed by a HASH edge (keyBy), got ${e.kind} from '${up.name}'`,
      );
    }
    if (e.inputIndex >= Math.max(down.inputs, 1)) {
      throw new PlanError(
        `operator '${down.name}' has ${down.inputs} input(s) but an edge targets input ${e.inputIndex}`,
      );
    }
    let seen = inputsSeen.get(down.id);
    if (!seen) inputsSeen.set(down.id, (seen = new Set()));
    seen.add(e.inputIndex);
  }
  const aboveKeyGroups = keyedAboveKeyGroups(spec);
  if (aboveKeyGroups.length > 0) throw new PlanError(aboveKeyGroups[0]!);
  let sinks = 0;
  for (const o of spec.operators) {
    if (o.type === 'sink') sinks++;
    const seen = inputsSeen.get(o.id) ?? new Set<number>();
    for (let i = 0; i < o.inputs; i++) {
      if (!seen.has(i)) throw new PlanError(`operator '${o.name}' has no input ${i}; connect a stream to it`);
    }
    if (o.type === 'source' && o.inputs !== 0) throw new PlanError(`source '${o.name}' must declare 0 inputs`);
    if (o.options.nonParallel === true && o.parallelism !== 1) {
      throw new PlanError(`operator '${o.name}' is not parallel and must have parallelism 1, got ${o.parallelism}`);
    }
  }
  if (sinks === 0) throw new PlanError('job has no sink: end a pipeline with print(), sinkTo(...) or collect()');
  return spec;
}

/**
 * Keyed operators above the 128 key groups: the surplus subtasks would get no key group, so no records,
 * and their state would be dropped at restore.
 */
export function keyedAboveKeyGroups(spec: Pick<JobGraphSpec, 'operators'>): string[] {
  return spec.operators
    .filter((o) => o.keyed && o.parallelism > MAX_PARALLELISM)
    .map(
      (o) =>
        `keyed operator '${o.name}' has parallelism ${o.parallelism}, above the ${MAX_PARALLELISM} key groups; set a parallelism of at most ${MAX_PARALLELISM}`,
    );
}

function topologicalOrder(
  spec: JobGraphSpec,
  outEdges: Map<string, EdgeSpec[]>,
  inEdges: Map<string, EdgeSpec[]>,
): string[] {
  const indegree = new Map(spec.operators.map((o) => [o.id, inEdges.get(o.id)!.length]));
  const ready = spec.operators.filter((o) => indegree.get(o.id) === 0).map((o) => o.id);
  const order: string[] = [];
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const e of outEdges.get(id)!) {
      const d = indegree.get(e.target)! - 1;
      indegree.set(e.target, d);
      if (d === 0) ready.push(e.target);
    }
  }
  if (order.length !== spec.operators.length) {
    const stuck = spec.operators.find((o) => !order.includes(o.id))!;
    throw new PlanError(`job graph has a cycle through operator '${stuck.name}'`);
  }
  return order;
}
