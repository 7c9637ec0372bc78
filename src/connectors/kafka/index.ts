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
    check: async (o, ctx) => (await import('./check.js')).checkKafka('source', o, ctx),
    // The client library loads with the first reader or writer: a job without Kafka never pays for it.
    createReader: async (o, ctx) => (await import('./source.js')).createKafkaReader(o, ctx),
    // Each subtask's position holds the offsets of the partitions it owned: every new subtask gets them
    // all and reads those it owns now (partitions are dealt by ownerOf at any parallelism).
    rescale(positions, parallelism) {
      const offsets: Record<string, string> = {};
      let topic: string | undefined;
      for (const p of positions as ({ topic: string; offsets: Record<string, string> } | undefined)[]) {
        if (!p) continue;
        topic = p.topic;
        Object.assign(offsets, p.offsets);
      }
      return Array.from({ length: parallelism }, () =>
        topic === undefined ? undefined : { topic, offsets: { ...offsets } },
      );
    },
  },
  sink: {
    validate: (o) => parseOptions('kafka sink', KafkaSinkOptions, o),
    check: async (o, ctx) => (await import('./check.js')).checkKafka('sink', o, ctx),
    rescalable: true,
    createWriter: async (o, ctx) => (await import('./sink.js')).createKafkaWriter(o, ctx),
  },
};
