// Generated rows into PostgreSQL exactly once (two-phase commit) on a real cluster: kill -9 of a worker
// three times at random moments (a seeded schedule). The table must hold every id exactly once and no
// prepared transaction may be left. (The database crash-restart is in postgres-restart.test.ts.)
import { test } from 'node:test';
import { chaosSeed, killWorkersAtRandom, prng, startPipe } from '../harness/chaos-job.js';
import { assertPgExactlyOnce, PG_SINK_JOB, pgUrl, sql, tableName } from '../harness/postgres.js';

const SEED = chaosSeed();

test(
  `postgres exactly once: kill -9 of a worker three times at random moments (seed ${SEED})`,
  { timeout: 180_000 },
  async (t) => {
    const url = pgUrl();
    const random = prng(SEED);
    const table = tableName('eo');
    await sql(url, `CREATE TABLE ${table} (id int, v int)`);
    const pipe = await startPipe(PG_SINK_JOB, { url, table, prefix: table, count: '40000', rate: '2000' });
    try {
      const log = await killWorkersAtRandom(pipe, random, 3);
      await assertPgExactlyOnce(pipe, url, table, 40_000, `seed ${SEED} (${log.join('; ')})`);
      t.diagnostic(log.join('; '));
    } finally {
      await pipe.h.close();
    }
  },
);
