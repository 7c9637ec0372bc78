/**
 * kafka: a source that reads a topic's partitions split over subtasks, offsets in checkpoints, and a
 * sink at-least-once (idempotent producer) or exactly-once (a transaction per checkpoint). See
 * docs/connectors.md#kafka and docs/design/ for why @platformatic/kafka.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
import { createKafkaReader, type KafkaRecord } from './source.js';
import { createKafkaWriter } from './sink.js';

export { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
export { ownerOf } from './partitions.js';
export type { KafkaRecord } from './source.js';
export type { KafkaCommittable } from './sink.js';

export const kafka: Connector<KafkaRecord, unknown> = {
  name: 'kafka',
  parallelSource: true,
  source: {
    validate: (o) => parseOptions('kafka source', KafkaSourceOptions, o),
    // Loaded eagerly, unlike pg and NATS: a sink whose first open is slowed by loading the library makes
    // the exactly-once kill test (seed 125) write duplicates, a timing-dependent fault still to be found.
    createReader: createKafkaReader,
  },
  sink: {
    validate: (o) => parseOptions('kafka sink', KafkaSinkOptions, o),
    createWriter: createKafkaWriter,
  },
};
