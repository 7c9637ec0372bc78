/** The Kafka connector's options, checked at plan time; each has a default a local setup can use. */
import { z } from 'zod';
import { Format } from '../formats.js';
import { ReconnectTimeout } from '../options.js';
import { MAX_TIMER_DELAY_MS } from '../../util/index.js';

const Brokers = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).transform((b) =>
  Array.isArray(b)
    ? b
    : b
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
);

const Common = {
  /** host:port of one or more brokers, as an array or comma-separated. */
  bootstrapServers: Brokers,
  topic: z.string().min(1),
  /** How long a request may wait for a broker before it fails (and the subtask with it). */
  requestTimeoutMs: z.number().int().positive().default(30_000),
  /** How long the connector rides out brokers that do not answer (a restart, a short outage), retrying, before its subtask fails. */
  reconnectTimeoutMs: ReconnectTimeout,
  clientId: z.string().min(1).default('clink'),
};

export const KafkaSourceOptions = z
  .object({
    ...Common,
    /**
     * Where a subtask starts on a partition with no checkpointed offset: the log's start, its end, the
     * first record at or after `startTimestampMs`, or the offsets `groupId` committed (else earliest).
     */
    startFrom: z.enum(['earliest', 'latest', 'timestamp', 'group-offsets']).default('earliest'),
    startTimestampMs: z.number().int().min(0).optional(),
    groupId: z.string().min(1).optional(),
    /** Read up to the end offsets seen at start, then end (a bounded job); default: read forever. */
    bounded: z.boolean().default(false),
    keyFormat: Format.default('string'),
    valueFormat: Format.default('json'),
    /** read_committed hides records of open and aborted transactions (what an exactly-once writer needs). */
    isolation: z.enum(['read_committed', 'read_uncommitted']).default('read_committed'),
    /**
     * Emit event-time watermarks from record timestamps, per partition: the minimum over the subtask's
     * partitions, less `maxOutOfOrdernessMs`; a partition silent for `idleTimeoutMs` holds none back.
     */
    watermarks: z
      .object({
        maxOutOfOrdernessMs: z.number().int().min(0).default(0),
        idleTimeoutMs: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    /** How often to look for partitions added to the topic (0: never). */
    partitionDiscoveryIntervalMs: z.number().int().min(0).default(30_000),
    /** Pace each subtask to this many records per second (tests, demos); default: flat out. */
    maxRecordsPerSecond: z.number().positive().optional(),
    fetchMaxBytes: z
      .number()
      .int()
      .positive()
      .default(8 << 20),
    fetchMaxWaitMs: z.number().int().min(0).max(MAX_TIMER_DELAY_MS).default(100),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.startFrom === 'timestamp' && o.startTimestampMs === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['startTimestampMs'],
        message: "startFrom 'timestamp' needs startTimestampMs (epoch milliseconds)",
      });
    }
    if (o.startFrom === 'group-offsets' && o.groupId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['groupId'],
        message: "startFrom 'group-offsets' needs groupId, the consumer group whose committed offsets to start from",
      });
    }
  });
export type KafkaSourceOptions = z.input<typeof KafkaSourceOptions>;

export const KafkaSinkOptions = z
  .object({
    ...Common,
    /**
     * at-least-once: idempotent sends, all acknowledged before a checkpoint completes. exactly-once: a
     * transaction per subtask per checkpoint, committed when the checkpoint completes.
     */
    delivery: z.enum(['at-least-once', 'exactly-once']).default('at-least-once'),
    /** exactly-once: the prefix of the transactional ids; stable across restarts, unique per job and sink. */
    transactionalIdPrefix: z.string().min(1).optional(),
    /** exactly-once: the broker aborts a transaction open longer than this (at most its transaction.max.timeout.ms). */
    transactionTimeoutMs: z.number().int().positive().default(900_000),
    /** The record field whose value is the message key (default: no key). */
    keyField: z.string().min(1).optional(),
    keyFormat: Format.default('string'),
    valueFormat: Format.default('json'),
    /** The most a produce request carries (a partition's batch must fit the broker's message.max.bytes, 1 MiB by default). */
    maxRequestBytes: z
      .number()
      .int()
      .positive()
      .default(512 << 10),
    /** Records waiting for the request in flight before writes wait (backpressure). */
    maxBufferedRecords: z.number().int().positive().default(50_000),
    compression: z.enum(['none', 'gzip', 'snappy', 'lz4', 'zstd']).default('none'),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.delivery === 'exactly-once' && o.transactionalIdPrefix === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['transactionalIdPrefix'],
        message:
          "delivery 'exactly-once' needs transactionalIdPrefix, stable across restarts and unique per job and sink (e.g. 'orders-enricher')",
      });
    }
  });
export type KafkaSinkOptions = z.input<typeof KafkaSinkOptions>;
