/**
 * The checks on a job's built-in connectors, as the planner runs them: each one's options against its
 * schema, a source that cannot run in parallel at parallelism 1, and a sink that names records by their
 * position only where a replay from a checkpoint repeats their order. The SDK applies the first two
 * when a job is built; these catch a graph built without them (`--graph-json`, a job with its own SDK).
 */
import { BUILTIN_CAPABILITIES } from '../connectors/index.js';
import { replayOrderProblem, type JobGraphSpec, type OperatorSpec, type PhysicalPlan } from '../plan/index.js';
import { connectorOptions, namedConnector } from '../sdk/index.js';
import { lintError, type Finding } from './finding.js';

/** A built-in connector an operator names by string, and which side of it the operator uses. */
function builtinOf(op: OperatorSpec): { name: string; side: 'source' | 'sink' } | undefined {
  const name = op.options.connector;
  if (typeof name !== 'string' || op.options.connectorInJob === true || (op.type !== 'source' && op.type !== 'sink'))
    return undefined;
  return namedConnector(name) ? { name, side: op.type } : undefined;
}

export function connectorFindings(spec: JobGraphSpec, plan: PhysicalPlan | undefined): Finding[] {
  const out: Finding[] = [];
  for (const op of spec.operators) {
    const b = builtinOf(op);
    if (!b) continue;
    const connector = namedConnector(b.name)!;
    const factory = connector[b.side];
    if (!factory) {
      out.push(
        lintError(
          'connector-side',
          `operator '${op.name}' uses connector '${b.name}' as a ${b.side}, and it has no ${b.side} side`,
          'CLINK_ERR_CONNECTOR',
        ),
      );
      continue;
    }
    try {
      factory.validate?.(connectorOptions(op.options));
    } catch (err) {
      out.push(
        lintError('connector-options', `operator '${op.name}': ${(err as Error).message}`, 'CLINK_ERR_CONNECTOR'),
      );
    }
    if (b.side === 'source' && connector.parallelSource === false && op.parallelism !== 1) {
      out.push(
        lintError(
          'source-not-parallel',
          `source '${op.name}' (connector ${b.name}) reads one ordered log and runs at parallelism 1 only, but is planned at ${op.parallelism}: every subtask would read it all; remove its setParallelism()`,
          'CLINK_ERR_PLAN',
        ),
      );
    }
    const positional = BUILTIN_CAPABILITIES.find((c) => c.name === b.name)?.sink?.positionalIds;
    if (b.side === 'sink' && positional && op.options[positional.unlessOption] === undefined && plan) {
      const problem = replayOrderProblem(plan, op.id);
      if (problem) {
        out.push(
          lintError(
            'sink-input-order',
            `sink '${op.name}' (connector ${b.name}) names each record by its position in its input (no ${positional.unlessOption}), and a replay from a checkpoint would not repeat that order (${problem}): records would be dropped as duplicates and others written twice; set ${positional.unlessOption} to a field unique per record, or give the sink one ordered input (parallelism 1, chained to its source)`,
            'CLINK_ERR_CONNECTOR',
          ),
        );
      }
    }
  }
  return out;
}
