/**
 * kafka: a source that reads a topic's partitions split over subtasks, offsets in checkpoints, and a
 * sink at-least-once (idempotent producer) or exactly-once (a transaction per checkpoint). See
 * docs/connectors.md#kafka and docs/design/ for why @platformatic/kafka.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
import type { KafkaRecord } from './source.js';

export { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
export { ownerOf } from './partitions.js';
export type { KafkaRecord } from './source.js';
export type { KafkaCommittable } from './sink.js';

export const kafka: Connector<KafkaRecord, unknown> = {
  name: 'kafka',
  parallelSource: true,
  source: {
    validate: (o) => parseOptions('kafka source', KafkaSourceOptions, o),
    // The client library loads with the first reader or writer: a job without Kafka never pays for it.
    createReader: async (o, ctx) => (await import('./source.js')).createKafkaReader(o, ctx),
  },
  sink: {
    validate: (o) => parseOptions('kafka sink', KafkaSinkOptions, o),
    createWriter: async (o, ctx) => (await import('./sink.js')).createKafkaWriter(o, ctx),
  },
};
