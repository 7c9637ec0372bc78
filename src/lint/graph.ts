/**
 * The checks on a job graph (a job module's, or `--graph-json`): whether the operators as declared can
 * do what they say. Errors here are refused at submit, by the client and (structure, connectors,
 * guarantee) by the coordinator; warnings say what will not work as the job expects.
 */
import { guaranteeRefusal, jobGuarantee, keepsConnectorState, unknownConnectors } from '../connectors/index.js';
import { createPhysicalPlan, keyedAboveKeyGroups, MAX_PARALLELISM, reachableParallelisms, slotNeed, specProblems, type JobGraphSpec, type OperatorSpec, type PhysicalPlan } from '../plan/index.js';
import { lintError, lintWarning, type Finding } from './finding.js';

export interface GraphLintOptions {
  /** The job takes checkpoints (--checkpoint-dir). */
  checkpointing: boolean;
  /** Retries of a failed subtask without checkpoints: the job's, else the coordinator's default. */
  regionRetries: number;
  /** Slot sharing as the cluster runs it. @default true */
  slotSharing?: boolean;
  /** The cluster's slots (--available-slots): a graph that needs more is an error. Unchecked when absent. */
  availableSlots?: number;
}

/** Every check on the graph; a graph the planner refuses gets that refusal and the checks that need no plan. */
export function jobGraphFindings(spec: JobGraphSpec, o: GraphLintOptions): Finding[] {
  const invalid = specProblems(spec);
  if (invalid !== undefined) return [lintError('graph-invalid', `invalid job graph:\n${invalid}`, 'CLINK_ERR_PLAN')];
  const out: Finding[] = [];
  const aboveKeyGroups = keyedAboveKeyGroups(spec);
  for (const m of aboveKeyGroups) out.push(lintError('keyed-above-key-groups', m, 'CLINK_ERR_PLAN'));
  let plan: PhysicalPlan | undefined;
  try {
    plan = createPhysicalPlan(spec);
  } catch (err) {
    const message = (err as Error).message;
    if (!aboveKeyGroups.includes(message)) out.push(lintError('graph-structure', message, 'CLINK_ERR_PLAN'));
  }
  for (const m of unknownConnectors(spec.operators)) out.push(lintError('unknown-connector', m, 'CLINK_ERR_CONNECTOR'));
  const short = guaranteeRefusal(spec.job.guarantee, jobGuarantee(spec.operators, o.checkpointing, o.regionRetries));
  if (short) out.push(lintError('guarantee', short, 'CLINK_ERR_CONNECTOR'));
  if (plan && o.availableSlots !== undefined) {
    const need = slotNeed(plan, o.slotSharing ?? true);
    if (need.slots > o.availableSlots) {
      out.push(lintError('slots', `the job needs ${need.slots} slots (${need.detail}) but --available-slots is ${o.availableSlots}: lower its parallelism, or add workers or --slots`, 'CLINK_ERR_NOT_ENOUGH_SLOTS'));
    }
  }
  if (o.checkpointing) out.push(...uidFindings(spec));
  out.push(...watermarkFindings(spec));
  out.push(...latenessFindings(spec));
  return out;
}

/** A window that waits for late records but drops what comes later without a trace. */
function latenessFindings(spec: JobGraphSpec): Finding[] {
  const withLateOutput = new Set(spec.edges.filter((e) => e.output === 'late').map((e) => e.source));
  return spec.operators
    .filter((op) => op.type === 'window' && typeof op.options.allowedLatenessMs === 'number' && op.options.allowedLatenessMs > 0 && !withLateOutput.has(op.id))
    .map((op) =>
      lintWarning(
        'lateness-without-late-output',
        `window '${op.name}' allows ${String(op.options.allowedLatenessMs)} ms of lateness but has no late-data output: records later than that are dropped, and only counted; call sideOutputLateData() on the windowed stream and read lateData() on its result`,
      ),
    );
}

/** Rescale bounds (--autoscale min..max): checked against the job's parallelism when there is a job. */
export function autoscaleFindings(bounds: { min: number; max: number }, checkpointing: boolean, spec?: JobGraphSpec): Finding[] {
  const range = `--autoscale ${bounds.min}..${bounds.max}`;
  const out: Finding[] = [lintError('autoscale-unsupported', `${range}: this build cannot rescale a running job yet, so the bounds would be ignored; drop the flag`)];
  if (!checkpointing) out.push(lintWarning('autoscale-without-checkpoints', `${range} without --checkpoint-dir and --checkpoint-interval-ms: a rescale restores from a completed checkpoint, so every rescale would be refused`));
  if (!spec || specProblems(spec) !== undefined) return out;
  const p = spec.defaultParallelism;
  const keyed = spec.operators.some((op) => op.keyed);
  const reachable = reachableParallelisms(p, keyed ? Math.min(bounds.max, MAX_PARALLELISM) : bounds.max).filter((n) => n >= bounds.min);
  const unreachable = [bounds.min, bounds.max].filter((n, i, a) => a.indexOf(n) === i && !reachable.includes(n));
  if (unreachable.length > 0) {
    const why = keyed && bounds.max > MAX_PARALLELISM ? `multiples and divisors of ${p}, at most ${MAX_PARALLELISM} for keyed operators` : `multiples and divisors of ${p}`;
    out.push(
      lintWarning(
        'autoscale-unreachable',
        `${range}: ${unreachable.join(' and ')} cannot be reached from parallelism ${p} (a rescale moves to ${why}); reachable in that range: ${reachable.length > 0 ? reachable.join(', ') : 'none'}`,
      ),
    );
  }
  return out;
}

/** Whether an operator keeps state a restore must find again by its id. */
const keepsState = (op: OperatorSpec): boolean => op.keyed || keepsConnectorState(op);

/**
 * Generated ids (`_inline_<type>_<n>`) count operators in declaration order: a changed job renumbers
 * them. A SQL job's (`sql_...`) are its plan's, which no uid() can pin (design record 015).
 */
const isGeneratedId = (id: string): boolean => id.startsWith('_inline_');

function uidFindings(spec: JobGraphSpec): Finding[] {
  return spec.operators
    .filter((op) => keepsState(op) && isGeneratedId(op.id))
    .map((op) =>
      lintWarning(
        'stateful-without-uid',
        `${op.name === op.id ? `operator ${op.id}` : `operator '${op.name}' (${op.id})`} keeps state (${op.type}) and has no uid(): its generated id changes when operators are added before it, and a checkpoint finds state by id, so a changed job cannot restore it; give it .uid('<a stable name>')`,
      ),
    );
}

/** Operators that fire on event time. */
function eventTime(op: OperatorSpec): boolean {
  if (op.type === 'intervalJoin') return true;
  return (op.type === 'window' || op.type === 'windowJoin') && op.options.time !== 'processing';
}

/** A source that stamps records and emits watermarks itself (Kafka with `watermarks`), or one the job brings, which may. */
const sourceHasWatermarks = (op: OperatorSpec): boolean => op.options.connectorInJob === true || (op.options.connector === 'kafka' && op.options.watermarks !== undefined);

function watermarkFindings(spec: JobGraphSpec): Finding[] {
  const ops = new Map(spec.operators.map((op) => [op.id, op]));
  const inputs = new Map<string, string[]>();
  for (const e of spec.edges) (inputs.get(e.target) ?? inputs.set(e.target, []).get(e.target)!).push(e.source);
  const out: Finding[] = [];
  for (const op of spec.operators.filter(eventTime)) {
    // Walk upstream; a path stops at an assignTimestamps or a source with watermarks of its own.
    const bare = new Set<string>();
    const seen = new Set<string>();
    const stack = [...(inputs.get(op.id) ?? [])];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      const up = ops.get(id);
      if (!up || up.type === 'assignTimestamps') continue;
      if (up.type === 'source') {
        if (!sourceHasWatermarks(up)) bare.add(up.name);
        continue;
      }
      stack.push(...(inputs.get(id) ?? []));
    }
    if (bare.size > 0) {
      out.push(
        lintWarning(
          'no-watermarks',
          `${op.type === 'intervalJoin' ? 'interval join' : op.type === 'windowJoin' ? 'window join' : 'event-time window'} '${op.name}' has no watermark strategy between it and ${[...bare].map((n) => `'${n}'`).join(', ')}: records from there carry no event time and no watermark moves it, so it cannot fire; call assignTimestamps(...) after the source, or use { time: 'processing' }`,
        ),
      );
    }
  }
  return out;
}
