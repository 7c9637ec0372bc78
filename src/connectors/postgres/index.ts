/**
 * postgres: a sink that inserts or upserts rows, at-least-once or exactly-once through two-phase commit
 * (PREPARE TRANSACTION at the barrier, COMMIT PREPARED on completion), and a bounded source that scans a
 * table or query split by key range. See docs/connectors.md#postgresql.
 */
import type { Connector } from '../../sdk/index.js';
import { parseOptions } from '../options.js';
import { PostgresSinkOptions, PostgresSourceOptions } from './options.js';
import { createPostgresWriter } from './sink.js';
import { createPostgresReader } from './source.js';

export { PostgresSinkOptions, PostgresSourceOptions } from './options.js';

export const postgres: Connector<Record<string, unknown>, unknown> = {
  name: 'postgres',
  parallelSource: true,
  source: { validate: (o) => parseOptions('postgres source', PostgresSourceOptions, o), createReader: createPostgresReader },
  sink: { validate: (o) => parseOptions('postgres sink', PostgresSinkOptions, o), createWriter: createPostgresWriter },
};
