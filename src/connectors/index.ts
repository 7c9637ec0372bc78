/**
 * Built-in connectors, by name: `blackhole`, `datagen`, `file`, `kafka`, `nats`, `nexmark`, `postgres`, `print`, `sequence`.
 *
 * @example
 * env.fromSource('datagen', { count: 100, seed: 7 }).sinkTo('file', { path: '/tmp/out' });
 */
import { installNamedConnectors, type Connector } from '../sdk/index.js';
import { blackhole } from './blackhole/index.js';
import { datagen } from './datagen/index.js';
import { file } from './file/index.js';
import { kafka } from './kafka/index.js';
import { nats } from './nats/index.js';
import { nexmark } from './nexmark/index.js';
import { postgres } from './postgres/index.js';
import { printConnector } from './print/index.js';
import { sequence } from './sequence/index.js';
import { DECLARED_CAPABILITIES, type ConnectorCapabilities } from './capabilities.js';

export { blackhole } from './blackhole/index.js';
export { datagen, datagenRow, DatagenOptions, type DatagenField } from './datagen/index.js';
export { file, DEFAULT_ROLL_BYTES } from './file/index.js';
export {
  kafka,
  KafkaSinkOptions,
  KafkaSourceOptions,
  ownerOf,
  type KafkaRecord,
  type KafkaCommittable,
} from './kafka/index.js';
export {
  nexmark,
  nexmarkGenerator,
  NexmarkGenerator,
  NexmarkOptions,
  type Auction,
  type Bid,
  type NexmarkEvent,
  type Person,
} from './nexmark/index.js';
export { nats, NatsSinkOptions, NatsSourceOptions, type NatsRecord } from './nats/index.js';
export { postgres, PostgresSinkOptions, PostgresSourceOptions } from './postgres/index.js';
export { printConnector, formatRecord } from './print/index.js';
export { sequence } from './sequence/index.js';
export { parseOptions, sleep } from './options.js';
export { resolveSecrets } from './secrets.js';
export { checkConnectors } from './preflight.js';
export {
  guaranteeRefusal,
  jobGuarantee,
  keepsConnectorState,
  sinkReplayEffect,
  type ReplayEffect,
  unknownConnectors,
  type ConnectorCapabilities,
  type Delivery,
  type JobGuarantee,
} from './capabilities.js';

/**
 * Why an operator cannot be restored at another parallelism because of its connector, or undefined when
 * it can: a source must divide its positions (SourceFactory.rescale), a sink must clear what the earlier
 * subtasks it takes over left (SinkFactory.rescalable). Read from the connector objects, or for one a job
 * brings, from what its spec says of it (connectorRescalable).
 */
export function connectorRescaleRefusal(op: {
  name: string;
  type: string;
  options: Record<string, unknown>;
}): string | undefined {
  const name = op.options.connector;
  if (typeof name !== 'string' || (op.type !== 'source' && op.type !== 'sink')) return undefined;
  if (name === 'collect') return undefined;
  if (name === 'elements') return `source '${op.name}' (fromElements) runs at parallelism 1 only`;
  let able: boolean;
  if (op.options.connectorInJob === true) able = op.options.connectorRescalable === true;
  else {
    const c = builtinConnectors(() => undefined).get(name);
    able = op.type === 'source' ? c?.source?.rescale !== undefined : c?.sink?.rescalable === true;
  }
  if (able) return undefined;
  return op.type === 'source'
    ? `source '${op.name}' (connector ${name}) cannot divide its positions among another number of subtasks`
    : `sink '${op.name}' (connector ${name}) cannot hand what its subtasks left to another number of them`;
}

/** The connectors a job can name by string, given where `print` writes. */
export function builtinConnectors(stdout: (text: string) => void | Promise<void>): Map<string, Connector> {
  return new Map<string, Connector>([
    ['blackhole', blackhole as Connector],
    ['datagen', datagen as Connector],
    ['file', file],
    ['kafka', kafka as Connector],
    ['nats', nats as Connector],
    ['nexmark', nexmark as Connector],
    ['postgres', postgres as Connector],
    ['print', printConnector(stdout) as Connector],
    ['sequence', sequence as Connector],
  ]);
}

// A job that names a built-in connector by string is planned with the connector itself (sdk/named-connectors.ts).
const NAMED = builtinConnectors(() => undefined);
installNamedConnectors((name) => NAMED.get(name));

/** What each built-in connector promises (`GET /api/v1/connectors`, `clink connectors`): as declared, with what its object says. */
export const BUILTIN_CAPABILITIES: readonly ConnectorCapabilities[] = DECLARED_CAPABILITIES.map((c) => ({
  ...c,
  ...(c.source ? { source: { ...c.source, parallel: NAMED.get(c.name)?.parallelSource !== false } } : {}),
})) as ConnectorCapabilities[];
