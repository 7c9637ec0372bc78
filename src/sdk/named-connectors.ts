/**
 * Connectors a job names by string (`fromSource('nats', ...)`, `sinkTo('file', ...)`). The engine
 * installs its built-in ones here (connectors/index.ts), so a named connector is planned exactly as the
 * same connector passed as an object: its options checked against its schema, a source that cannot run
 * in parallel planned at parallelism 1.
 */
import { ConnectorError } from '../errors.js';
import type { Connector } from './connector.js';

let lookup: (name: string) => Connector | undefined = () => undefined;

/** @internal The engine's built-in connectors, by name. */
export function installNamedConnectors(byName: (name: string) => Connector | undefined): void {
  lookup = byName;
}

/** The connector `name` stands for, or undefined when none is installed under it. */
export function namedConnector(name: string): Connector | undefined {
  return lookup(name);
}

/** Keys the SDK adds to a connector operator's options for the engine; the connector never sees them. */
const ENGINE_KEYS = new Set(['connectorInJob', 'connectorRescalable', 'nonParallel']);

/** The options a connector's `validate()` and reader or writer get: the spec's, without the engine's keys. */
export function connectorOptions(options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(options).filter(([k]) => !ENGINE_KEYS.has(k)));
}

/** Check options against one side of a connector; a refusal names the operator. Returns what `validate()` made of them. */
export function checkConnectorOptions(
  side: { validate?(options: unknown): unknown },
  options: Record<string, unknown>,
  operator: string,
): Record<string, unknown> {
  if (!side.validate) return options;
  try {
    return side.validate(options) as Record<string, unknown>;
  } catch (err) {
    throw new ConnectorError(`operator '${operator}': ${(err as Error).message}`, { cause: err });
  }
}
