/**
 * The graph builder behind the DataStream API. It records operators and edges as they are declared and
 * turns them into a JobGraphSpec plus the table of user functions, keyed by operator id.
 */
import { InvalidArgumentError } from '../errors.js';
import type {
  ChainingStrategy,
  EdgeKind,
  EdgeSpec,
  JobGraphSpec,
  OperatorSpec,
  OperatorType,
  SideOutput,
} from '../plan/index.js';
import { MAX_PARALLELISM, withoutUnchainablePreAggregation } from '../plan/index.js';
import type { Connector } from './connector.js';

/** Everything a runtime needs to run an operator that is not JSON: user functions and connector objects. */
export interface OperatorFunctions {
  fn?: (...args: any[]) => any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Key selector per input index, for keyed operators. */
  keySelectors?: ((value: any) => unknown)[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** A process/aggregate/window/join function object. */
  udf?: object;
  connector?: Connector;
  items?: readonly unknown[];
  /** Declared states' migrations by state name (see States). */
  migrations?: Readonly<Record<string, (old: unknown) => unknown>>;
}

export type PendingEdgeKind = EdgeKind | 'AUTO';

export interface OpNode {
  id: string;
  name: string;
  type: OperatorType;
  parallelism: number | undefined;
  keyed: boolean;
  inputs: number;
  chaining: ChainingStrategy;
  /** Set by slotSharingGroup(); otherwise the planner inherits it from the inputs. */
  slotSharingGroup?: string;
  options: Record<string, unknown>;
  fns: OperatorFunctions;
  /** Runs at this node's parallelism unless given its own (an operator the engine inserts after it). */
  sameParallelismAs?: OpNode;
}

interface PendingEdge {
  source: OpNode;
  target: OpNode;
  kind: PendingEdgeKind;
  inputIndex: 0 | 1;
  output?: SideOutput;
}

export class GraphBuilder {
  readonly nodes: OpNode[] = [];
  private readonly edges: PendingEdge[] = [];
  private readonly counters = new Map<string, number>();
  // Ids minted for operators without a uid(): `_inline_<type>_<n>`; the SQL planner mints `sql_<type>_<n>`
  // (its plan decides them, as Flink SQL's do), which the lint does not ask a uid() of.
  idPrefix = '_inline_';

  addOperator(
    type: OperatorType,
    fns: OperatorFunctions,
    init: { keyed?: boolean; inputs?: number; options?: Record<string, unknown>; label?: string } = {},
  ): OpNode {
    const label = init.label ?? type;
    const n = this.counters.get(label) ?? 0;
    this.counters.set(label, n + 1);
    const id = `${this.idPrefix}${label}_${n}`;
    const node: OpNode = {
      id,
      name: id,
      type,
      parallelism: undefined,
      keyed: init.keyed ?? false,
      inputs: init.inputs ?? (type === 'source' ? 0 : 1),
      chaining: 'ALWAYS',
      options: init.options ?? {},
      fns,
    };
    this.nodes.push(node);
    return node;
  }

  addEdge(source: OpNode, target: OpNode, kind: PendingEdgeKind, inputIndex: 0 | 1 = 0, output?: SideOutput): void {
    this.edges.push({ source, target, kind, inputIndex, ...(output ? { output } : {}) });
  }

  build(
    job: {
      name: string;
      version: string;
      description?: string;
      guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
    },
    defaultParallelism: number,
    params: Record<string, string>,
    overrides: Readonly<Record<string, number>> = {},
  ): { spec: JobGraphSpec; functions: Map<string, OperatorFunctions> } {
    const parallelismOf = (n: OpNode): number =>
      (Object.hasOwn(overrides, n.id) ? overrides[n.id] : undefined) ??
      n.parallelism ??
      (n.sameParallelismAs
        ? parallelismOf(n.sameParallelismAs)
        : n.options.nonParallel === true
          ? 1
          : defaultParallelism);
    const operators: OperatorSpec[] = this.nodes.map((n) => ({
      id: n.id,
      name: n.name,
      type: n.type,
      parallelism: parallelismOf(n),
      keyed: n.keyed,
      inputs: n.inputs,
      chaining: n.chaining,
      ...(n.slotSharingGroup === undefined ? {} : { slotSharingGroup: n.slotSharingGroup }),
      options: n.options,
    }));
    const edges: EdgeSpec[] = this.edges.map((e) => ({
      source: e.source.id,
      target: e.target.id,
      kind: e.kind !== 'AUTO' ? e.kind : parallelismOf(e.source) === parallelismOf(e.target) ? 'FORWARD' : 'REBALANCE',
      inputIndex: e.inputIndex,
      ...(e.output ? { output: e.output } : {}),
    }));
    const declared: JobGraphSpec = {
      specVersion: 1,
      job: {
        name: job.name,
        version: job.version,
        ...(job.description === undefined ? {} : { description: job.description }),
        ...(job.guarantee === undefined ? {} : { guarantee: job.guarantee }),
      },
      maxParallelism: MAX_PARALLELISM,
      defaultParallelism,
      params,
      operators,
      edges,
    };
    // The planner's chaining rule decides which pre-aggregations stay; a window fed directly keys raw
    // records again, with the key selector its pre-aggregation had.
    const { spec, fedDirectly } = withoutUnchainablePreAggregation(declared);
    const byId = new Map(this.nodes.map((n) => [n.id, n]));
    const functions = new Map(
      spec.operators.map((o) => {
        const fns = byId.get(o.id)!.fns;
        const local = fedDirectly.get(o.id);
        return [
          o.id,
          local === undefined ? fns : { ...fns, keySelectors: byId.get(local)!.fns.keySelectors! },
        ] as const;
      }),
    );
    return { spec, functions };
  }
}

export function checkParallelism(what: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new InvalidArgumentError(`${what}: parallelism must be a whole number >= 1, got ${String(n)}`);
  }
  return n;
}

export function checkFunction(what: string, f: unknown): void {
  if (typeof f !== 'function') throw new InvalidArgumentError(`${what} expects a function, got ${typeof f}`);
}

export function checkMethod(what: string, obj: unknown, method: string, required = true): void {
  if (typeof obj !== 'object' || obj === null) {
    throw new InvalidArgumentError(
      `${what} expects an object with a ${method}() method, got ${obj === null ? 'null' : typeof obj}`,
    );
  }
  const m = (obj as Record<string, unknown>)[method];
  if (required ? typeof m !== 'function' : m !== undefined && typeof m !== 'function') {
    throw new InvalidArgumentError(`${what}: ${method} must be a function, got ${typeof m}`);
  }
}
