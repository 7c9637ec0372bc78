// SQL over the real nats-server `npm run test:services` starts: a JetStream stream of JSON messages
// read as a table (its rows the messages' values), bounded, filtered and aggregated.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runJob } from '../../src/index.js';
import { BUILTIN_CAPABILITIES } from '../../src/connectors/index.js';
import { SqlCatalog, SqlSession, sqlJobDefinition } from '../../src/sql/index.js';
import { createStream, natsServer, publishJson, streamName } from '../harness/nats.js';

describe('SQL over NATS JetStream', () => {
  test('a stream of JSON readings read as a table, filtered and counted per sensor', async () => {
    const server = natsServer();
    const stream = streamName('sqlsrc');
    await createStream(server, stream);
    const readings = Array.from({ length: 400 }, (_, i) => ({ sensor: `s${i % 4}`, value: i % 50 }));
    await publishJson(server, `${stream}.readings`, readings);
    const text = `
      CREATE TEMPORARY TABLE readings (sensor STRING, value INT) WITH ('connector' = 'nats', 'servers' = '${server}', 'stream' = '${stream}', 'bounded' = 'true');
      SELECT sensor, COUNT(*) AS n, MAX(value) AS top FROM readings WHERE value >= 10 GROUP BY sensor;`;
    const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
    const job = (await session.execute(text)).at(-1)!;
    if (job.kind !== 'job') return assert.fail('not a job');
    const r = await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script));
    const rows = (r.collected.result as { sensor: string; n: number; top: number }[]).sort((a, b) =>
      a.sensor.localeCompare(b.sensor),
    );
    const want = ['s0', 's1', 's2', 's3'].map((sensor) => {
      const mine = readings.filter((x) => x.sensor === sensor && x.value >= 10);
      return { sensor, n: mine.length, top: Math.max(...mine.map((x) => x.value)) };
    });
    assert.deepEqual(rows, want);
  });
});
