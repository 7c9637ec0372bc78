// Generated rows into PostgreSQL exactly once across a crash-restart of the database (immediate
// shutdown, then recovery) in the middle of a transaction: every id exactly once, nothing left prepared.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startPipe, type Pipe } from '../harness/chaos-job.js';
import { assertPgExactlyOnce, PG_SINK_JOB, sql, tableName } from '../harness/postgres.js';
// @ts-expect-error: a plain ES module shared with the service runner
import { startPostgres } from '../../scripts/postgres.mjs';

test(
  'postgres exactly once across a crash-restart of the database in the middle of a transaction',
  { timeout: 180_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-pg-restart-'));
    const server = (await startPostgres(join(dir, 'pg'), () => undefined)) as {
      url: string;
      restart(hard: boolean): Promise<void>;
      stop(): Promise<void>;
    };
    let pipe: Pipe | undefined;
    try {
      const table = tableName('restart');
      await sql(server.url, `CREATE TABLE ${table} (id int, v int)`);
      pipe = await startPipe(PG_SINK_JOB, { url: server.url, table, prefix: table, count: '8000', rate: '1500' });
      await pipe.checkpoints(2);
      await server.restart(true);
      await assertPgExactlyOnce(pipe, server.url, table, 8_000, 'database restart');
    } finally {
      await pipe?.h.close();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
