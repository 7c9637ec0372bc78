/** The PostgreSQL connector's options, checked at plan time. */
import { z } from 'zod';
import { ReconnectTimeout } from '../options.js';

const Identifier = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$/,
    'a table or column name: letters, digits, _ and $, optionally schema-qualified',
  );

const Connection = {
  /** postgres://user:password@host:port/database (a password may come from env://VAR). */
  connectionString: z.string().min(1),
  /** How long connecting and each statement may take before the subtask fails. */
  statementTimeoutMs: z.number().int().positive().default(60_000),
  /** How long the connector rides out a server that went away (a restart), reconnecting, before its subtask fails. */
  reconnectTimeoutMs: ReconnectTimeout,
};

export const PostgresSinkOptions = z
  .object({
    ...Connection,
    table: Identifier,
    /** insert: every record a new row. upsert: insert or update by primaryKey. */
    mode: z.enum(['insert', 'upsert']).default('insert'),
    primaryKey: z.array(Identifier).min(1).optional(),
    /** The record fields written, one column each (default: the first record's fields). */
    columns: z.array(Identifier).min(1).optional(),
    /**
     * at-least-once: each batch commits on its own. exactly-once: a transaction per subtask per checkpoint,
     * PREPARE TRANSACTION at the barrier and COMMIT PREPARED when the checkpoint completes (the server
     * needs max_prepared_transactions > 0).
     */
    delivery: z.enum(['at-least-once', 'exactly-once']).default('at-least-once'),
    /** exactly-once: the prefix of the prepared transactions' ids; stable across restarts, unique per job and sink. */
    transactionIdPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : -')
      .optional(),
    /** Rows per INSERT statement. */
    batchRows: z.number().int().positive().max(10_000).default(500),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.mode === 'upsert' && !o.primaryKey)
      ctx.addIssue({
        code: 'custom',
        path: ['primaryKey'],
        message: "mode 'upsert' needs primaryKey, the columns of the table's primary key (or a unique constraint)",
      });
    if (o.delivery === 'exactly-once' && !o.transactionIdPrefix) {
      ctx.addIssue({
        code: 'custom',
        path: ['transactionIdPrefix'],
        message:
          "delivery 'exactly-once' needs transactionIdPrefix, stable across restarts and unique per job and sink (e.g. 'orders-to-pg')",
      });
    }
  });
export type PostgresSinkOptions = z.input<typeof PostgresSinkOptions>;

export const PostgresSourceOptions = z
  .object({
    ...Connection,
    /** The table to scan, or `query`, a SELECT whose rows are scanned. */
    table: Identifier.optional(),
    query: z.string().min(1).optional(),
    /** An integer column, unique, that splits the scan into key ranges (one per subtask) and orders it. */
    keyColumn: Identifier.default('id'),
    /** Rows per round trip. */
    fetchRows: z.number().int().positive().default(2_000),
  })
  .strict()
  .superRefine((o, ctx) => {
    if ((o.table === undefined) === (o.query === undefined))
      ctx.addIssue({ code: 'custom', path: ['table'], message: 'give either table or query (not both)' });
  });
export type PostgresSourceOptions = z.input<typeof PostgresSourceOptions>;
