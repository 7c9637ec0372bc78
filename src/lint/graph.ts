/**
 * The checks on a job graph (a job module's, or `--graph-json`): whether the operators as declared can
 * do what they say. Errors here are refused at submit, by the client and (structure, connectors,
 * guarantee) by the coordinator; warnings say what will not work as the job expects.
 */
import { guaranteeRefusal, jobGuarantee, keepsConnectorState, unknownConnectors } from '../connectors/index.js';
import {
  createPhysicalPlan,
  keyedAboveKeyGroups,
  MAX_PARALLELISM,
  slotNeed,
  specProblems,
  type JobGraphSpec,
  type OperatorSpec,
  type PhysicalPlan,
} from '../plan/index.js';
import { connectorFindings } from './connectors.js';
import { lintError, lintWarning, type Finding } from './finding.js';

export interface GraphLintOptions {
  /** The job takes checkpoints (--checkpoint-dir). */
  checkpointing: boolean;
  /** Retries of a failed subtask without checkpoints: the job's, else the coordinator's default. */
  regionRetries: number;
  /** --allow-duplicates-on-fallback: a restore older than what a transactional sink committed goes ahead (at-least-once). */
  allowDuplicatesOnFallback?: boolean;
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
  out.push(...connectorFindings(spec, plan));
  const short = guaranteeRefusal(
    spec.job.guarantee,
    jobGuarantee(spec.operators, o.checkpointing, o.regionRetries, o.allowDuplicatesOnFallback),
  );
  if (short) out.push(lintError('guarantee', short, 'CLINK_ERR_CONNECTOR'));
  if (plan && o.availableSlots !== undefined) {
    const need = slotNeed(plan, o.slotSharing ?? true);
    if (need.slots > o.availableSlots) {
      out.push(
        lintError(
          'slots',
          `the job needs ${need.slots} slots (${need.detail}) but --available-slots is ${o.availableSlots}: lower its parallelism, or add workers or --slots`,
          'CLINK_ERR_NOT_ENOUGH_SLOTS',
        ),
      );
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
    .filter(
      (op) =>
        op.type === 'window' &&
        typeof op.options.allowedLatenessMs === 'number' &&
        op.options.allowedLatenessMs > 0 &&
        !withLateOutput.has(op.id),
    )
    .map((op) =>
      lintWarning(
        'lateness-without-late-output',
        `window '${op.name}' allows ${String(op.options.allowedLatenessMs)} ms of lateness but has no late-data output: records later than that are dropped, and only counted; call sideOutputLateData() on the windowed stream and read lateData() on its result`,
      ),
    );
}

/**
 * Autoscaler bounds (--autoscale min..max). It rescales by drain and replan, doubling or halving within
 * the bounds, from a checkpoint it takes itself: it needs a checkpoint directory, and keyed operators
 * stop at 128.
 */
export function autoscaleFindings(
  bounds: { min: number; max: number },
  checkpointDir: boolean,
  spec?: JobGraphSpec,
): Finding[] {
  const range = `--autoscale ${bounds.min}..${bounds.max}`;
  const out: Finding[] = [];
  if (!checkpointDir)
    out.push(
      lintError(
        'autoscale-without-checkpoints',
        `${range} without --checkpoint-dir: a rescale restores from a checkpoint of the job's own; give --checkpoint-dir`,
      ),
    );
  if (!spec || specProblems(spec) !== undefined) return out;
  if (bounds.max > MAX_PARALLELISM && spec.operators.some((op) => op.keyed)) {
    out.push(
      lintError(
        'autoscale-unreachable',
        `${range}: keyed operators cannot run above ${MAX_PARALLELISM} (the key groups); reachable: ${Math.min(bounds.min, MAX_PARALLELISM)}..${MAX_PARALLELISM}`,
      ),
    );
  }
  const p = spec.defaultParallelism;
  if (p < bounds.min || p > bounds.max)
    out.push(
      lintWarning(
        'autoscale-outside',
        `${range}: the job starts at parallelism ${p}, outside the bounds, and the autoscaler moves it only on backpressure or idleness; submit with -p inside them`,
      ),
    );
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
const sourceHasWatermarks = (op: OperatorSpec): boolean =>
  op.options.connectorInJob === true || (op.options.connector === 'kafka' && op.options.watermarks !== undefined);

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
