/**
 * JobGraphSpec: the serialisable (JSON) plan that a job's build function produces. It names operators,
 * their type, parallelism and options, and the edges between them. User functions are not in it: every
 * process rebuilds the job module, and operator ids (minted deterministically) bind functions to operators.
 */
import { createRequire } from 'node:module';
import type * as ZodModule from 'zod';
import type { ZodType } from 'zod';
import { MAX_PARALLELISM } from './keygroups.js';
import { describeIssues, formatPath } from '../util/index.js';

export const EDGE_KINDS = ['FORWARD', 'HASH', 'REBALANCE', 'BROADCAST'] as const;
export type EdgeKind = (typeof EDGE_KINDS)[number];

export const OPERATOR_TYPES = [
  'source',
  'map',
  'flatMap',
  'filter',
  'process',
  'assignTimestamps',
  'union',
  'keyedReduce',
  'keyedProcess',
  'window',
  'localWindowAggregate',
  'coProcess',
  'intervalJoin',
  'windowJoin',
  'sink',
] as const;
export type OperatorType = (typeof OPERATOR_TYPES)[number];

export const CHAINING_STRATEGIES = ['ALWAYS', 'HEAD', 'NEVER'] as const;
export type ChainingStrategy = (typeof CHAINING_STRATEGIES)[number];

export interface OperatorSpec {
  id: string;
  name: string;
  type: OperatorType;
  parallelism: number;
  keyed: boolean;
  inputs: number;
  chaining: ChainingStrategy;
  /** Given by slotSharingGroup(); absent: inherited from the inputs (see the planner). */
  slotSharingGroup?: string;
  options: Record<string, unknown>;
}

/** Side outputs an operator can send records to besides its main output: a window's late records. */
export const SIDE_OUTPUTS = ['late'] as const;
export type SideOutput = (typeof SIDE_OUTPUTS)[number];

export interface EdgeSpec {
  source: string;
  target: string;
  kind: EdgeKind;
  inputIndex: 0 | 1;
  /** The source's side output this edge carries; absent: its main output. */
  output?: SideOutput;
}

export interface JobGraphSpec {
  specVersion: 1;
  job: {
    name: string;
    version: string;
    description?: string;
    guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
  };
  maxParallelism: typeof MAX_PARALLELISM;
  defaultParallelism: number;
  params: Record<string, string>;
  operators: OperatorSpec[];
  edges: EdgeSpec[];
}

type Zod = typeof ZodModule;
let schema: ZodType<JobGraphSpec> | undefined;

/**
 * The zod schema of a JobGraphSpec, built on first use: zod takes ~100 ms to load, which a client that
 * only submits a cached plan should not pay at start-up.
 */
export function jobGraphSpecSchema(): ZodType<JobGraphSpec> {
  if (schema) return schema;
  const { z } = createRequire(import.meta.url)('zod') as Zod;
  const JsonValue: ZodType<unknown> = z.lazy(() =>
    z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), z.record(z.string(), JsonValue)]),
  );
  const Operator = z
    .object({
      id: z.string().min(1),
      name: z.string().min(1),
      type: z.enum(OPERATOR_TYPES),
      parallelism: z.number().int().min(1),
      keyed: z.boolean(),
      inputs: z.number().int().min(0).max(2),
      chaining: z.enum(CHAINING_STRATEGIES),
      slotSharingGroup: z.string().min(1).max(128).optional(),
      options: z.record(z.string(), JsonValue),
    })
    .strict();
  const Edge = z
    .object({
      source: z.string().min(1),
      target: z.string().min(1),
      kind: z.enum(EDGE_KINDS),
      inputIndex: z.union([z.literal(0), z.literal(1)]),
      output: z.enum(SIDE_OUTPUTS).optional(),
    })
    .strict();
  schema = z
    .object({
      specVersion: z.literal(1),
      job: z
        .object({
          name: z.string().min(1),
          version: z.string().min(1),
          description: z.string().optional(),
          guarantee: z.enum(['at-most-once', 'at-least-once', 'exactly-once']).optional(),
        })
        .strict(),
      maxParallelism: z.literal(MAX_PARALLELISM),
      defaultParallelism: z.number().int().min(1),
      params: z.record(z.string(), z.string()),
      operators: z.array(Operator).min(1),
      edges: z.array(Edge),
    })
    .strict() as unknown as ZodType<JobGraphSpec>;
  return schema;
}

/** A readable account of what is wrong with a spec, or undefined when it is valid. */
export function specProblems(input: unknown): string | undefined {
  const r = jobGraphSpecSchema().safeParse(input);
  if (r.success) return undefined;
  return describeIssues(r.error.issues, input, (path) => {
    // operators[i].options.x reads as the operator's name and its option, the way the job wrote it.
    const ops = (
      input as { operators?: { name?: unknown; type?: unknown; options?: { connector?: unknown } }[] } | undefined
    )?.operators;
    const op = path[0] === 'operators' && typeof path[1] === 'number' ? ops?.[path[1]] : undefined;
    if (op && typeof path[1] === 'number') {
      const connector =
        typeof op.options?.connector === 'string' ? ` (the ${op.options.connector} ${String(op.type)})` : '';
      const name = typeof op.name === 'string' ? `operator '${op.name}'${connector}` : `operators[${path[1]}]`;
      const rest = path.slice(2);
      if (rest[0] === 'options' && rest.length > 1) return `${name} option ${formatPath(rest.slice(1))}`;
      return rest.length > 0 ? `${name} ${formatPath(rest)}` : name;
    }
    return path.length > 0 ? formatPath(path) : 'the job graph';
  });
}
