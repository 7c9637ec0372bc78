/**
 * kafka: a source that reads a topic's partitions split over subtasks, offsets in checkpoints, and a
 * sink at-least-once (idempotent producer) or exactly-once (a transaction per checkpoint). See
 * docs/connectors.md#kafka and docs/design/ for why @platformatic/kafka.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
import { createKafkaWriter } from './sink.js';
import { createKafkaReader, type KafkaRecord } from './source.js';

export { KafkaSinkOptions, KafkaSourceOptions } from './options.js';
export { ownerOf, type KafkaRecord } from './source.js';
export type { KafkaCommittable } from './sink.js';

export const kafka: Connector<KafkaRecord, unknown> = {
  name: 'kafka',
  parallelSource: true,
  source: {
    validate: (o) => parseOptions('kafka source', KafkaSourceOptions, o),
    createReader: createKafkaReader,
  },
  sink: {
    validate: (o) => parseOptions('kafka sink', KafkaSinkOptions, o),
    createWriter: createKafkaWriter,
  },
};
