import { ClinkError, InvalidArgumentError, JobDefinitionError } from '../errors.js';
import type { JobGraphSpec } from '../plan/index.js';
import { JobEnvironment } from './env.js';
import { GraphBuilder, type OperatorFunctions } from './graph.js';

const JOB_BRAND = Symbol.for('clink.job');

export interface JobInfo {
  name: string;
  version: string;
  description?: string;
  /**
   * The delivery guarantee the job needs end to end. A submit whose sources, sinks and checkpointing
   * cannot give it is refused, naming what limits it. @default none asked for (the job runs with what it gets)
   */
  guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
}

export type BuildFunction = (env: JobEnvironment) => void;

export interface JobDefinition extends Readonly<JobInfo> {
  readonly build: BuildFunction;
}

/**
 * Declare a job. A job module's default export is the result:
 *
 * @example
 * export default defineJob({ name: 'wordcount', version: '1' }, (env) => {
 *   env.fromElements(['a b', 'b']).flatMap((l, out) => l.split(' ').forEach((w) => out.collect(w)))
 *     .keyBy((w) => w).count().print();
 * });
 */
export function defineJob(info: JobInfo, build: BuildFunction): JobDefinition {
  if (typeof info !== 'object' || info === null)
    throw new InvalidArgumentError('defineJob() expects { name, version } first');
  if (typeof info.name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(info.name)) {
    throw new InvalidArgumentError(
      `defineJob(): name must be letters, digits, '_', '.' or '-', got '${String(info.name)}'`,
    );
  }
  if (typeof info.version !== 'string' || info.version.length === 0) {
    throw new InvalidArgumentError(`defineJob(): version must be a non-empty string, got ${String(info.version)}`);
  }
  if (typeof build !== 'function')
    throw new InvalidArgumentError('defineJob() expects a build function second: (env) => { ... }');
  if (info.guarantee !== undefined && !['at-most-once', 'at-least-once', 'exactly-once'].includes(info.guarantee)) {
    throw new InvalidArgumentError(
      `defineJob(): guarantee must be 'at-most-once', 'at-least-once' or 'exactly-once', got '${String(info.guarantee)}'`,
    );
  }
  const job = {
    name: info.name,
    version: info.version,
    ...(info.description ? { description: info.description } : {}),
    ...(info.guarantee ? { guarantee: info.guarantee } : {}),
    build,
  };
  Object.defineProperty(job, JOB_BRAND, { value: true });
  return Object.freeze(job);
}

/** True for a value made by defineJob, from this copy of the SDK or another. */
export function isJobDefinition(value: unknown): value is JobDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[JOB_BRAND] === true;
}

export interface BuiltJob {
  spec: JobGraphSpec;
  functions: Map<string, OperatorFunctions>;
}

export interface BuildOptions {
  parallelism?: number;
  params?: Record<string, string>;
  /**
   * Parallelism of operators by id, over what the build function gave them: a rescale's targets, and a
   * worker rebuilding the plan it was sent (whose parallelism may have been rescaled since the submit).
   */
  parallelismOf?: Readonly<Record<string, number>>;
}

/** Run a job's build function and return its plan and function table. The same module gives the same plan. */
export function buildJob(job: JobDefinition, options: BuildOptions = {}): BuiltJob {
  if (!isJobDefinition(job)) throw new JobDefinitionError('not a job: pass the value returned by defineJob(...)');
  const graph = new GraphBuilder();
  const params = Object.freeze({ ...(options.params ?? {}) });
  const env = new JobEnvironment(graph, params, options.parallelism ?? 1);
  try {
    job.build(env);
  } catch (err) {
    if (err instanceof ClinkError) throw err;
    const msg = err instanceof Error ? err.message : String(err);
    throw new JobDefinitionError(`job '${job.name}': build function threw: ${msg}`, { cause: err });
  }
  if (graph.nodes.length === 0) {
    throw new JobDefinitionError(`job '${job.name}': build function declared no operators; add a source and a sink`);
  }
  return graph.build(job, env.parallelism, { ...params }, options.parallelismOf);
}
