/**
 * Built-in connectors, by name: `blackhole`, `datagen`, `file`, `kafka`, `nats`, `nexmark`, `postgres`, `print`, `sequence`.
 *
 * @example
 * env.fromSource('datagen', { count: 100, seed: 7 }).sinkTo('file', { path: '/tmp/out' });
 */
import type { Connector } from '../sdk/index.js';
import { blackhole } from './blackhole/index.js';
import { datagen } from './datagen/index.js';
import { file } from './file/index.js';
import { kafka } from './kafka/index.js';
import { nats } from './nats/index.js';
import { nexmark } from './nexmark/index.js';
import { postgres } from './postgres/index.js';
import { printConnector } from './print/index.js';
import { sequence } from './sequence/index.js';

export { blackhole } from './blackhole/index.js';
export { datagen, datagenRow, DatagenOptions, type DatagenField } from './datagen/index.js';
export { file, DEFAULT_ROLL_BYTES } from './file/index.js';
export { kafka, KafkaSinkOptions, KafkaSourceOptions, ownerOf, type KafkaRecord, type KafkaCommittable } from './kafka/index.js';
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
export { BUILTIN_CAPABILITIES, guaranteeRefusal, jobGuarantee, keepsConnectorState, unknownConnectors, type ConnectorCapabilities, type Delivery, type JobGuarantee } from './capabilities.js';

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
