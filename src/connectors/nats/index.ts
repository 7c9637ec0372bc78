/**
 * nats: NATS JetStream. The source replays a stream (one ordered log, so one subtask) from a stream
 * sequence kept in checkpoints; the sink publishes each record with a message id the stream deduplicates
 * on, so what a restore replays is dropped by the server. See docs/connectors.md#nats-jetstream.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { NatsSinkOptions, NatsSourceOptions } from './options.js';
import type { NatsRecord } from './source.js';

export { NatsSinkOptions, NatsSourceOptions } from './options.js';
export type { NatsRecord } from './source.js';

export const nats: Connector<NatsRecord, unknown> = {
  name: 'nats',
  parallelSource: false,
  // The client library loads with the first reader or writer: a job without NATS never pays for it.
  source: {
    validate: (o) => parseOptions('nats source', NatsSourceOptions, o),
    check: async (o, ctx) => (await import('./check.js')).checkNats('source', o, ctx),
    createReader: async (o, ctx) => (await import('./source.js')).createNatsReader(o, ctx),
  },
  sink: {
    validate: (o) => parseOptions('nats sink', NatsSinkOptions, o),
    check: async (o, ctx) => (await import('./check.js')).checkNats('sink', o, ctx),
    createWriter: async (o, ctx) => (await import('./sink.js')).createNatsWriter(o, ctx),
  },
};
