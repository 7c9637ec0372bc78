/**
 * JobGraphSpec: the serialisable (JSON) plan that a job's build function produces. It names operators,
 * their type, parallelism and options, and the edges between them. User functions are not in it: every
 * process rebuilds the job module, and operator ids (minted deterministically) bind functions to operators.
 */
import { z } from 'zod';
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
  'coProcess',
  'intervalJoin',
  'windowJoin',
  'sink',
] as const;
export type OperatorType = (typeof OPERATOR_TYPES)[number];

export const CHAINING_STRATEGIES = ['ALWAYS', 'HEAD', 'NEVER'] as const;
export type ChainingStrategy = (typeof CHAINING_STRATEGIES)[number];

const JsonValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), z.record(z.string(), JsonValue)]),
);

export const OperatorSpecSchema = z
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
export type OperatorSpec = z.infer<typeof OperatorSpecSchema> & { options: Record<string, unknown> };

export const EdgeSpecSchema = z
  .object({
    source: z.string().min(1),
    target: z.string().min(1),
    kind: z.enum(EDGE_KINDS),
    inputIndex: z.union([z.literal(0), z.literal(1)]),
  })
  .strict();
export type EdgeSpec = z.infer<typeof EdgeSpecSchema>;

export const JobGraphSpecSchema = z
  .object({
    specVersion: z.literal(1),
    job: z.object({ name: z.string().min(1), version: z.string().min(1), description: z.string().optional() }).strict(),
    maxParallelism: z.literal(MAX_PARALLELISM),
    defaultParallelism: z.number().int().min(1),
    params: z.record(z.string(), z.string()),
    operators: z.array(OperatorSpecSchema).min(1),
    edges: z.array(EdgeSpecSchema),
  })
  .strict();
export type JobGraphSpec = Omit<z.infer<typeof JobGraphSpecSchema>, 'operators'> & { operators: OperatorSpec[] };
