/**
 * The restore gate: may this plan resume from that checkpoint? A checkpoint records the job's name, its
 * graph's hash and every task's chain (operator ids, which are uids or generated ids, with their types)
 * and parallelism. State is stored per subtask and read back by position in the chain, so a task is
 * restored only when its chain and parallelism are unchanged. Decided here, before any slot is waited for:
 *
 * - another job's name: refused (two jobs of the same shape share generated operator ids);
 * - a task whose chain changed: refused, naming it;
 * - a task whose parallelism changed: restored rescaled (runtime/rescale.ts) when each of its operators
 *   can be (a connector that cannot divide its positions or its leftovers is refused, named);
 * - state of operators the plan no longer has: refused, unless --allow-non-restored-state drops it;
 * - tasks the checkpoint has no state for (operators added since): they start empty, and the log says so;
 * - a declared state whose checkpointed schema its declaration neither reads nor migrates from: refused,
 *   naming the operator, the state and both schemas (plan/state-schema.ts).
 *
 * Markers written before identities were recorded carry only their subtask set: then the subtask sets
 * must be equal, as before.
 */
import { createHash } from 'node:crypto';
import { ClinkError } from '../errors.js';
import { connectorRescaleRefusal } from '../connectors/index.js';
import {
  stateRestoreVerdict,
  subtaskKey,
  type PhysicalPlan,
  type StateDeclarationSpec,
  type TaskSpec,
} from '../plan/index.js';

/** What a checkpoint records of its job's shape. */
export interface CheckpointIdentity {
  jobName: string;
  /** SHA-256 over the tasks (chains, types, parallelism) and edges. */
  graphHash: string;
  tasks: {
    id: string;
    parallelism: number;
    /** `states`: the keyed states an operator declared, with their schemas (absent: none declared). */
    operators: { id: string; type: string; states?: Record<string, StateDeclarationSpec> }[];
  }[];
}

export function identityOf(plan: PhysicalPlan, jobName: string): CheckpointIdentity {
  const tasks = plan.tasks.map((t) => ({
    id: t.id,
    parallelism: t.parallelism,
    operators: t.operators.map((o) => {
      const states = o.options.states as Record<string, StateDeclarationSpec> | undefined;
      return { id: o.id, type: o.type, ...(states ? { states } : {}) };
    }),
  }));
  const edges = plan.spec.edges.map((e) => [e.source, e.target, e.kind]);
  return { jobName, graphHash: createHash('sha256').update(JSON.stringify({ tasks, edges })).digest('hex'), tasks };
}

/** The marker fields the gate reads (a CompletedMarker has them; older markers lack `identity`). */
export interface RestoreSource {
  checkpointId: number;
  subtasks: string[];
  identity?: CheckpointIdentity;
}

export interface RestoreDecision {
  /** Tasks whose state is loaded. */
  restoredTasks: Set<string>;
  /** Of those, the ones restored at another parallelism: the parallelism the checkpoint has them at. */
  rescaled: Map<string, number>;
  /** Operators whose state is loaded. */
  restoredOperators: number;
  /** Operators with state in the checkpoint that the plan lacks (dropped by --allow-non-restored-state). */
  dropped: string[];
  /** Tasks of the plan with no state in the checkpoint: they start empty. */
  fresh: string[];
  /** The plan's graph hash, and whether it differs from the checkpoint's in ways the rules above accept. */
  graphHash: string;
  graphChanged: boolean;
}

const chainOf = (t: CheckpointIdentity['tasks'][number]): string =>
  t.operators.map((o) => `${o.id}:${o.type}`).join(' -> ');

/** Decide, or throw a CLINK_ERR_PLAN error naming what differs and how to proceed. */
export function checkRestore(
  source: RestoreSource,
  plan: PhysicalPlan,
  jobName: string,
  allowNonRestoredState: boolean,
): RestoreDecision {
  const id = source.checkpointId;
  const mine = identityOf(plan, jobName);
  if (!source.identity) return legacyLayout(source, plan, mine.graphHash);
  const theirs = source.identity;
  if (theirs.jobName !== jobName) {
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore refused: checkpoint ${id} was taken of job '${theirs.jobName}', this job is '${jobName}'; restore it into the job it was taken of`,
    );
  }
  const planned = new Map(mine.tasks.map((t) => [t.id, t]));
  const problems: string[] = [];
  const dropped: string[] = [];
  const unrescalable: string[] = [];
  const rescaled = new Map<string, number>();
  const restoredTasks = new Set<string>();
  const schemaChanges: string[] = [];
  let restoredOperators = 0;
  for (const t of theirs.tasks) {
    const now = planned.get(t.id);
    if (!now) {
      dropped.push(...t.operators.map((o) => o.id));
      continue;
    }
    if (chainOf(now) !== chainOf(t)) {
      problems.push(`task ${t.id}'s chain was ${chainOf(t)}, the plan has ${chainOf(now)}`);
      continue;
    }
    if (now.parallelism !== t.parallelism) {
      const why = rescaleRefusal(plan.tasks.find((x) => x.id === t.id)!);
      if (why) {
        unrescalable.push(`task ${t.id} at ${t.parallelism}, the plan ${now.parallelism}: ${why}`);
        continue;
      }
      rescaled.set(t.id, t.parallelism);
    }
    restoredTasks.add(t.id);
    restoredOperators += t.operators.length;
    t.operators.forEach((o, i) => schemaChanges.push(...stateSchemaRefusals(plan, o, now.operators[i]!)));
  }
  if (schemaChanges.length > 0) {
    throw new ClinkError(
      'CLINK_ERR_STATE',
      `restore refused: checkpoint ${id} holds state this job reads differently: ${schemaChanges.join('; ')}; declare a schema its values read as, or a migration from the stored one (States.value(schema, { migrate: { from, fn } }))`,
    );
  }
  const plannedOps = new Set(mine.tasks.flatMap((t) => t.operators.map((o) => o.id)));
  // An operator that moved to another chain is not gone: its state just cannot follow it.
  const moved = dropped.filter((o) => plannedOps.has(o));
  if (moved.length > 0)
    problems.push(`operators ${moved.join(', ')} are chained differently now, so their state cannot be read back`);
  if (unrescalable.length > 0) {
    const held = theirs.tasks.reduce((n, t) => n + t.parallelism, 0);
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore layout differs: checkpoint ${id} holds state for ${held} subtasks, the plan deploys ${plan.subtasks.length} (${unrescalable.join('; ')}); submit those at the parallelism the checkpoint was taken at`,
    );
  }
  if (problems.length > 0) {
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore refused: checkpoint ${id} does not fit this plan: ${problems.join('; ')}; submit the job as it was when the checkpoint was taken`,
    );
  }
  if (dropped.length > 0 && !allowNonRestoredState) {
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore refused: checkpoint ${id} holds state for operators this job no longer has: ${dropped.join(', ')}; submit with --allow-non-restored-state to drop it`,
    );
  }
  return {
    restoredTasks,
    rescaled,
    restoredOperators,
    dropped,
    fresh: mine.tasks.filter((t) => !restoredTasks.has(t.id)).map((t) => t.id),
    graphHash: mine.graphHash,
    graphChanged: theirs.graphHash !== mine.graphHash,
  };
}

type IdentityOperator = CheckpointIdentity['tasks'][number]['operators'][number];

/** Each state declared both in the checkpoint and now that does not restore, named with both schemas. */
function stateSchemaRefusals(plan: PhysicalPlan, stored: IdentityOperator, now: IdentityOperator): string[] {
  if (!stored.states || !now.states) return [];
  const name = plan.spec.operators.find((o) => o.id === now.id)?.name ?? now.id;
  return Object.entries(now.states).flatMap(([state, declared]) => {
    const was = stored.states![state];
    if (!was) return [];
    const verdict = stateRestoreVerdict(was, declared);
    return 'refuse' in verdict ? [`operator '${name}' state '${state}': ${verdict.refuse}`] : [];
  });
}

/** Why a task cannot be restored at another parallelism (its first operator that cannot), or undefined. */
export function rescaleRefusal(task: TaskSpec): string | undefined {
  for (const op of task.operators) {
    if (op.options.nonParallel === true) return `operator '${op.name}' runs at parallelism 1 only`;
    const why = connectorRescaleRefusal(op);
    if (why) return why;
  }
  return undefined;
}

/** A marker without identities: only the subtask sets can be compared, and they must be equal. */
function legacyLayout(source: RestoreSource, plan: PhysicalPlan, graphHash: string): RestoreDecision {
  const planned = plan.subtasks.map((s) => subtaskKey(s.taskId, s.index)).sort();
  const held = [...source.subtasks].sort();
  if (JSON.stringify(planned) !== JSON.stringify(held)) {
    const missing = planned.filter((k) => !held.includes(k));
    const extra = held.filter((k) => !planned.includes(k));
    throw new ClinkError(
      'CLINK_ERR_PLAN',
      `restore layout differs: checkpoint ${source.checkpointId} holds state for ${held.length} subtasks, the plan deploys ${planned.length}` +
        (missing.length ? `; no state for ${missing.join(', ')}` : '') +
        (extra.length ? `; state for subtasks the plan lacks: ${extra.join(', ')}` : '') +
        '; submit with the parallelism the checkpoint was taken at',
    );
  }
  return {
    restoredTasks: new Set(plan.tasks.map((t) => t.id)),
    rescaled: new Map(),
    restoredOperators: plan.spec.operators.length,
    dropped: [],
    fresh: [],
    graphHash,
    graphChanged: false,
  };
}
