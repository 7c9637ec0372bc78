/**
 * Window pre-aggregation that cannot chain is dropped. A `localWindowAggregate` pays only chained to the
 * operator before it (it then folds records into one partial per key and pane before the shuffle); where
 * the chaining rule says that edge does not chain (its input feeds others too, refuses chaining, ...), it
 * would be a task of its own, costing slots and channels for nothing. The window is then fed directly:
 * its input edge comes from the pre-aggregation's input, and it aggregates raw records again.
 */
import { chainingRule } from './planner.js';
import type { JobGraphSpec } from './spec.js';

export interface PrunedSpec {
  spec: JobGraphSpec;
  /** Each window now fed directly -> the pre-aggregation it lost (whose key selector it takes back). */
  fedDirectly: Map<string, string>;
}

export function withoutUnchainablePreAggregation(spec: JobGraphSpec): PrunedSpec {
  const chains = chainingRule(spec);
  const inputOf = new Map<string, string>(); // dropped pre-aggregation -> its input
  for (const e of spec.edges) {
    const target = spec.operators.find((o) => o.id === e.target)!;
    if (target.type === 'localWindowAggregate' && !chains(e)) inputOf.set(target.id, e.source);
  }
  const fedDirectly = new Map<string, string>();
  if (inputOf.size === 0) return { spec, fedDirectly };
  const edges = spec.edges
    .filter((e) => !inputOf.has(e.target))
    .map((e) => {
      const input = inputOf.get(e.source);
      if (input === undefined) return e;
      fedDirectly.set(e.target, e.source);
      return { ...e, source: input };
    });
  const operators = spec.operators
    .filter((o) => !inputOf.has(o.id))
    .map((o) => {
      if (!fedDirectly.has(o.id)) return o;
      const { preAggregated: _, ...options } = o.options;
      return { ...o, options };
    });
  return { spec: { ...spec, operators, edges }, fedDirectly };
}
