/**
 * JobGraphSpec: the serialisable (JSON) plan that a job's build function produces. It names operators,
 * their type, parallelism and options, and the edges between them. User functions are not in it: every
 * process rebuilds the job module, and operator ids (minted deterministically) bind functions to operators.
 */
import { createRequire } from 'node:module';
import type * as ZodModule from 'zod';
import type { ZodType } from 'zod';
import { MAX_PARALLELISM } from './keygroups.js';

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
  options: Record<string, unknown>;
}

export interface EdgeSpec {
  source: string;
  target: string;
  kind: EdgeKind;
  inputIndex: 0 | 1;
}

export interface JobGraphSpec {
  specVersion: 1;
  job: { name: string; version: string; description?: string };
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
      options: z.record(z.string(), JsonValue),
    })
    .strict();
  const Edge = z
    .object({
      source: z.string().min(1),
      target: z.string().min(1),
      kind: z.enum(EDGE_KINDS),
      inputIndex: z.union([z.literal(0), z.literal(1)]),
    })
    .strict();
  schema = z
    .object({
      specVersion: z.literal(1),
      job: z.object({ name: z.string().min(1), version: z.string().min(1), description: z.string().optional() }).strict(),
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
  const { z } = createRequire(import.meta.url)('zod') as Zod;
  return z.prettifyError(r.error);
}
