/**
 * postgres: a sink that inserts or upserts rows, at-least-once or exactly-once through two-phase commit
 * (PREPARE TRANSACTION at the barrier, COMMIT PREPARED on completion), and a bounded source that scans a
 * table or query split by key range. See docs/connectors.md#postgresql.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { PostgresSinkOptions, PostgresSourceOptions } from './options.js';

export { PostgresSinkOptions, PostgresSourceOptions } from './options.js';

export const postgres: Connector<Record<string, unknown>, unknown> = {
  name: 'postgres',
  parallelSource: true,
  // The client library loads with the first reader or writer: a job without PostgreSQL never pays for it.
  source: {
    validate: (o) => parseOptions('postgres source', PostgresSourceOptions, o),
    check: async (o, ctx) => (await import('./check.js')).checkPostgres('source', o, ctx),
    createReader: async (o, ctx) => (await import('./source.js')).createPostgresReader(o, ctx),
  },
  sink: {
    validate: (o) => parseOptions('postgres sink', PostgresSinkOptions, o),
    check: async (o, ctx) => (await import('./check.js')).checkPostgres('sink', o, ctx),
    rescalable: true,
    createWriter: async (o, ctx) => (await import('./sink.js')).createPostgresWriter(o, ctx),
  },
};
