/**
 * What each built-in connector can promise, in one registry: which sides it has, the delivery guarantee
 * of each (what a restart from a checkpoint gives), whether a source can be replayed from a position in
 * the checkpoint and what that position is, whether a sink commits with the checkpoint
 * (transactional), and whether it speaks TLS. `GET /api/v1/connectors` and `clink connectors` show it;
 * the submit gates read it.
 */

export type Delivery = 'at-most-once' | 'at-least-once' | 'exactly-once';

export interface ConnectorCapabilities {
  name: string;
  description: string;
  /** `parallel`: whether it runs at any parallelism (the connector's own `parallelSource`, see index.ts). */
  source?: { delivery: Delivery; replayable: boolean; offsetModel: string; parallel: boolean };
  /**
   * `delivery` is the best the sink gives; where an option chooses (Kafka's `delivery`), `choice` names
   * it and the level it gives when absent. `positionalIds`: the sink names each record by its position
   * in its input unless the option is set, which is exact only when a replay repeats that order.
   */
  sink?: {
    delivery: Delivery;
    transactional: boolean;
    choice?: { option: string; default: Delivery };
    positionalIds?: { unlessOption: string };
  };
  tls: boolean;
}

/** What each connector declares; `source.parallel` is derived from the connector object (index.ts). */
export type DeclaredCapabilities = Omit<ConnectorCapabilities, 'source'> & {
  source?: Omit<NonNullable<ConnectorCapabilities['source']>, 'parallel'>;
};

export const DECLARED_CAPABILITIES: readonly DeclaredCapabilities[] = [
  {
    name: 'blackhole',
    description: 'discards every record (benchmarks)',
    sink: { delivery: 'exactly-once', transactional: false },
    tls: false,
  },
  {
    name: 'datagen',
    description: 'generated rows from field specs, seeded, optionally paced',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'row index per subtask' },
    tls: false,
  },
  {
    name: 'file',
    description: 'JSON lines or text; a sink whose parts become visible when the checkpoint after them completes',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'file and line' },
    sink: { delivery: 'exactly-once', transactional: true },
    tls: false,
  },
  {
    name: 'kafka',
    description:
      'Apache Kafka topics: partitions split over subtasks; a sink at-least-once, or exactly-once with a transaction per checkpoint',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'offset per partition' },
    sink: { delivery: 'exactly-once', transactional: true, choice: { option: 'delivery', default: 'at-least-once' } },
    tls: false,
  },
  {
    name: 'nats',
    description:
      'NATS JetStream: a stream replayed from a sequence; a sink deduplicated by message id (within the stream duplicate_window)',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'stream sequence' },
    sink: { delivery: 'exactly-once', transactional: false, positionalIds: { unlessOption: 'messageIdField' } },
    tls: false,
  },
  {
    name: 'nexmark',
    description: 'the Nexmark benchmark events (people, auctions, bids)',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'event index' },
    tls: false,
  },
  {
    name: 'postgres',
    description:
      'PostgreSQL: a bounded scan split by key range; a sink that inserts or upserts, exactly-once by two-phase commit',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'last key of a key range' },
    sink: { delivery: 'exactly-once', transactional: true, choice: { option: 'delivery', default: 'at-least-once' } },
    tls: true,
  },
  {
    name: 'print',
    description: 'each record as a line on standard output',
    sink: { delivery: 'at-least-once', transactional: false },
    tls: false,
  },
  {
    name: 'sequence',
    description: 'the integers of a range (fromSequence)',
    source: { delivery: 'exactly-once', replayable: true, offsetModel: 'next number' },
    tls: false,
  },
];

/** Connector names the runtime handles itself (fromElements, collect). */
const INTERNAL = new Set(['elements', 'collect']);

/**
 * The connector gate: every operator that names a connector by string must name one this build has
 * (one passed as an object travels in the job module). Returns one line per operator that does not.
 */
export function unknownConnectors(operators: readonly { name: string; options: Record<string, unknown> }[]): string[] {
  const known = new Set(DECLARED_CAPABILITIES.map((c) => c.name));
  const out: string[] = [];
  for (const op of operators) {
    const name = op.options.connector;
    if (typeof name !== 'string' || INTERNAL.has(name) || known.has(name) || op.options.connectorInJob === true)
      continue;
    out.push(
      `operator '${op.name}' names connector '${name}', which this build does not have; it has ${[...known].join(', ')} (or pass a connector object)`,
    );
  }
  return out;
}

const RANK: Record<Delivery, number> = { 'at-most-once': 0, 'at-least-once': 1, 'exactly-once': 2 };

/** The end-to-end guarantee a job runs with, and what limits it ('' when nothing does). */
export interface JobGuarantee {
  level: Delivery;
  limitedBy: string;
}

/**
 * What a job can promise end to end: without checkpoints, a failure loses what was in flight (a
 * region retry replays it: at-least-once); with them, the weakest of its sources' and sinks' guarantees
 * on restore. A connector passed as an object declares none: at-least-once.
 */
export function jobGuarantee(
  operators: readonly { name: string; type: string; options: Record<string, unknown> }[],
  checkpointing: boolean,
  regionRetries: number,
  allowDuplicatesOnFallback = false,
): JobGuarantee {
  if (!checkpointing)
    return {
      level: regionRetries > 0 ? 'at-least-once' : 'at-most-once',
      limitedBy: 'no checkpoint directory (--checkpoint-dir)',
    };
  const caps = new Map(DECLARED_CAPABILITIES.map((c) => [c.name, c]));
  let best: JobGuarantee = { level: 'exactly-once', limitedBy: '' };
  for (const op of operators) {
    const name = op.options.connector;
    if (typeof name !== 'string' || INTERNAL.has(name)) continue;
    const side = op.type === 'source' ? 'source' : 'sink';
    const declared = op.options.connectorInJob === true ? undefined : deliveryOf(caps.get(name), side, op.options);
    const level: Delivery = declared ?? 'at-least-once';
    if (RANK[level] < RANK[best.level])
      best = {
        level,
        limitedBy: `${side} '${op.name}' (connector ${name}${declared ? '' : ', which declares no guarantee'})`,
      };
  }
  // A restore older than a checkpoint its transactional sinks committed publishes that span again.
  const republishing = operators.find((op) => sinkReplayEffect(op) === 'republishes');
  if (allowDuplicatesOnFallback && republishing && best.level === 'exactly-once') {
    return {
      level: 'at-least-once',
      limitedBy: `--allow-duplicates-on-fallback (a restore older than what sink '${republishing.name}' committed writes that again)`,
    };
  }
  return best;
}

/** The guarantee one side of a connector gives with these options. */
function deliveryOf(
  c: DeclaredCapabilities | undefined,
  side: 'source' | 'sink',
  options: Record<string, unknown>,
): Delivery | undefined {
  if (side === 'source') return c?.source?.delivery;
  const choice = c?.sink?.choice;
  if (!choice) return c?.sink?.delivery;
  const chosen = options[choice.option];
  return chosen === 'at-most-once' || chosen === 'at-least-once' || chosen === 'exactly-once' ? chosen : choice.default;
}

/**
 * Whether an operator's connector keeps state a restore must find again by the operator's id: a source's
 * position, or a sink's pending commits (transactional, at exactly-once). Connectors the runtime handles
 * itself (fromElements, collect) and ones the job brings are not judged.
 */
export function keepsConnectorState(op: { type: string; options: Record<string, unknown> }): boolean {
  const name = op.options.connector;
  if (typeof name !== 'string' || INTERNAL.has(name) || op.options.connectorInJob === true) return false;
  if (op.type === 'source') return true;
  const c = DECLARED_CAPABILITIES.find((x) => x.name === name);
  return op.type === 'sink' && c?.sink?.transactional === true && deliveryOf(c, 'sink', op.options) === 'exactly-once';
}

/**
 * What a restore from a checkpoint older than one a sink had committed does to its output: `exact`,
 * nothing is seen twice (ids the system deduplicates, or output kept in the checkpoint); `republishes`,
 * what it committed after the older checkpoint is published again (a transactional sink); `rewrites`,
 * what it wrote after it is written again (an at-least-once sink, or one the job brings).
 */
export type ReplayEffect = 'exact' | 'republishes' | 'rewrites';

/** A sink operator's replay effect (see ReplayEffect); undefined for anything else. */
export function sinkReplayEffect(op: { type: string; options: Record<string, unknown> }): ReplayEffect | undefined {
  if (op.type !== 'sink') return undefined;
  const name = op.options.connector;
  if (typeof name !== 'string' || INTERNAL.has(name)) return 'exact';
  if (op.options.connectorInJob === true) return 'rewrites';
  const c = DECLARED_CAPABILITIES.find((x) => x.name === name);
  if (deliveryOf(c, 'sink', op.options) !== 'exactly-once') return 'rewrites';
  return c?.sink?.transactional ? 'republishes' : 'exact';
}

/** Why a job that asks for `wanted` cannot have it (one line naming what limits it), or undefined. */
export function guaranteeRefusal(wanted: Delivery | undefined, got: JobGuarantee): string | undefined {
  if (!wanted || RANK[got.level] >= RANK[wanted]) return undefined;
  return `the job asks for ${wanted} but can give ${got.level}: limited by ${got.limitedBy}`;
}
