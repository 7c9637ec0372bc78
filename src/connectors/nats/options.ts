/** The NATS JetStream connector's options, checked at plan time. */
import { z } from 'zod';
import { Format } from '../formats.js';
import { ReconnectTimeout } from '../options.js';

const Servers = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).transform((s) =>
  Array.isArray(s)
    ? s
    : s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
);

const Common = {
  /** host:port of one or more NATS servers, as an array or comma-separated. */
  servers: Servers,
  valueFormat: Format.default('json'),
  /** A credentials token (may come from env://VAR). */
  token: z.string().min(1).optional(),
  connectTimeoutMs: z.number().int().positive().default(10_000),
  /** How long the connector rides out a server that went away (a restart), reconnecting and publishing again, before its subtask fails. */
  reconnectTimeoutMs: ReconnectTimeout,
};

export const NatsSourceOptions = z
  .object({
    ...Common,
    stream: z.string().min(1),
    /** Only messages on these subjects (wildcards allowed); default: all of the stream's. */
    subject: z.string().min(1).optional(),
    /** With no checkpoint: the stream's first message, only new ones, or startSequence. */
    startFrom: z.enum(['first', 'new', 'sequence']).default('first'),
    startSequence: z.number().int().positive().optional(),
    /** Read up to the last message there at the start, then end. */
    bounded: z.boolean().default(false),
    /** Messages buffered ahead of the job. */
    bufferMessages: z.number().int().positive().default(2_000),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.startFrom === 'sequence' && o.startSequence === undefined)
      ctx.addIssue({ code: 'custom', path: ['startSequence'], message: "startFrom 'sequence' needs startSequence" });
  });
export type NatsSourceOptions = z.input<typeof NatsSourceOptions>;

export const NatsSinkOptions = z
  .object({
    ...Common,
    subject: z.string().min(1),
    /**
     * The record field whose value is the message id (unique per record). Without it, ids are the
     * subtask's position since its checkpoint: exact for a pipeline that replays in the same order.
     */
    messageIdField: z.string().min(1).optional(),
    /** The prefix of message ids; stable across restarts, unique per job and sink. */
    messageIdPrefix: z.string().min(1),
    /** Publishes awaiting the server's acknowledgement before writes wait. */
    maxPending: z.number().int().positive().default(4_096),
  })
  .strict();
export type NatsSinkOptions = z.input<typeof NatsSinkOptions>;
