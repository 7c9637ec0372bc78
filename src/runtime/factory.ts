/** Builds operator instances and connector readers/writers from a spec and the job's function table. */
import { ConnectorError, StateError } from '../errors.js';
import type { OperatorSpec } from '../plan/index.js';
import {
  connectorOptions,
  type Connector,
  type OperatorFunctions,
  type SinkWriter,
  type SourceContext,
  type SourceReader,
} from '../sdk/index.js';
import type { OperatorContext, StreamOperator } from './operator.js';
import { resolveSecrets } from '../connectors/index.js';
import {
  AssignTimestampsOperator,
  FilterOperator,
  FlatMapOperator,
  MapOperator,
  ProcessOperator,
  SinkOperator,
  SourceOperator,
  UnionOperator,
} from './operators/basic.js';
import { CollectSinkOperator } from './operators/collect.js';
import { IntervalJoinOperator } from './operators/join.js';
import { CoProcessOperator, KeyedProcessOperator, KeyedReduceOperator } from './operators/keyed.js';
import { LocalWindowAggregateOperator } from './operators/local-window-aggregate.js';
import { WindowOperator } from './operators/window.js';
import { windowFunctionAccumulator, windowJoinAccumulator } from './operators/window-accumulators.js';

export type ConnectorRegistry = ReadonlyMap<string, Connector>;

function connectorOf(
  spec: OperatorSpec,
  fns: OperatorFunctions,
  registry: ConnectorRegistry,
  side: 'source' | 'sink',
): Connector {
  const name = spec.options.connector as string;
  const c = fns.connector ?? registry.get(name);
  if (!c) {
    throw new ConnectorError(
      `operator '${spec.name}': unknown connector '${name}'; built-in connectors are ${[...registry.keys()].join(', ')}, ` +
        `or pass a connector object`,
    );
  }
  if (!c[side]) throw new ConnectorError(`operator '${spec.name}': connector '${name}' has no ${side} side`);
  return c;
}

/** Check every connector's options before any record flows. Returns validated options per operator. */
export function validateConnectors(
  operators: readonly OperatorSpec[],
  functions: ReadonlyMap<string, OperatorFunctions>,
  registry: ConnectorRegistry,
): Map<string, unknown> {
  const validated = new Map<string, unknown>();
  for (const spec of operators) {
    const name = spec.options.connector;
    if (name === undefined || name === 'elements' || name === 'collect') continue;
    const side = spec.type === 'source' ? 'source' : 'sink';
    const c = connectorOf(spec, functions.get(spec.id) ?? {}, registry, side);
    const factory = c[side]!;
    // Secrets are read here, where the connector runs, into a copy: the spec keeps the reference.
    const options = resolveSecrets(connectorOptions(spec.options), spec.name);
    validated.set(spec.id, factory.validate ? factory.validate(options) : options);
  }
  return validated;
}

export function createSourceReader(
  spec: OperatorSpec,
  fns: OperatorFunctions,
  registry: ConnectorRegistry,
  options: unknown,
  ctx: SourceContext,
): SourceReader<unknown> | Promise<SourceReader<unknown>> {
  if (spec.options.connector === 'elements') {
    const items = fns.items ?? [];
    let i = 0;
    return {
      read(out, max) {
        const stop = Math.min(items.length, i + max);
        for (; i < stop; i++) out.collect(items[i]);
        return i >= items.length ? 'END' : 'MORE';
      },
      snapshot: () => ({ i }),
      restore(position) {
        i = (position as { i: number }).i;
      },
    };
  }
  return connectorOf(spec, fns, registry, 'source').source!.createReader(options, ctx);
}

/** A source restored at another parallelism: its connector divides the earlier positions (SourceFactory.rescale). */
export async function rescaledSourcePosition(
  spec: OperatorSpec,
  fns: OperatorFunctions,
  registry: ConnectorRegistry,
  options: unknown,
  positions: readonly unknown[],
  ctx: SourceContext,
): Promise<unknown> {
  const source = connectorOf(spec, fns, registry, 'source').source!;
  if (!source.rescale)
    throw new StateError(
      `source '${spec.name}' (connector ${String(spec.options.connector)}) cannot divide its positions, so it cannot be restored at another parallelism`,
    );
  const divided = await source.rescale(positions, ctx.parallelism, options);
  return divided[ctx.subtaskIndex];
}

export function createOperator(ctx: OperatorContext, registry: ConnectorRegistry, options: unknown): StreamOperator {
  const { spec } = ctx;
  switch (spec.type) {
    case 'source':
      return new SourceOperator();
    case 'map':
      return new MapOperator();
    case 'filter':
      return new FilterOperator();
    case 'flatMap':
      return new FlatMapOperator();
    case 'process':
      return new ProcessOperator();
    case 'assignTimestamps':
      return new AssignTimestampsOperator();
    case 'union':
      return new UnionOperator();
    case 'keyedReduce':
      return new KeyedReduceOperator();
    case 'keyedProcess':
      return new KeyedProcessOperator();
    case 'coProcess':
      return new CoProcessOperator();
    case 'window':
      return new WindowOperator(windowFunctionAccumulator);
    case 'localWindowAggregate':
      return new LocalWindowAggregateOperator();
    case 'windowJoin':
      return new WindowOperator(windowJoinAccumulator);
    case 'intervalJoin':
      return new IntervalJoinOperator();
    case 'sink':
      if (spec.options.connector === 'collect') return new CollectSinkOperator(spec.options.collectName as string);
      return new SinkOperator(() => createSinkWriter(ctx, registry, options));
  }
}

function createSinkWriter(
  ctx: OperatorContext,
  registry: ConnectorRegistry,
  options: unknown,
): SinkWriter<unknown> | Promise<SinkWriter<unknown>> {
  const { spec, fns } = ctx;
  const sinkCtx = { operatorName: spec.name, subtaskIndex: ctx.subtaskIndex, parallelism: ctx.parallelism };
  return connectorOf(spec, fns, registry, 'sink').sink!.createWriter(options, sinkCtx);
}
