// SQL over the real Kafka broker `npm run test:services` starts: a table over a topic of JSON records
// (Flink's option names: properties.bootstrap.servers, scan.startup.mode, format), a windowed query
// and a filter written INSERT INTO other topics' tables, in one job (exactly-once needs checkpoints: the
// local runtime here takes none; the options' mapping is checked in test/sql/queries.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runJob } from '../../src/index.js';
import { BUILTIN_CAPABILITIES } from '../../src/connectors/index.js';
import { SqlCatalog, SqlSession, sqlJobDefinition } from '../../src/sql/index.js';
import { createTopic, kafkaBootstrap, produceJson, readTopic, topicName } from '../harness/kafka.js';

interface Order {
  id: number;
  customer: number;
  amount: number;
  ts: number;
}

describe('SQL over Kafka', () => {
  test('a topic of JSON orders read as a table; filtered rows and per-window counts written to topics', async () => {
    const bootstrap = kafkaBootstrap();
    const [input, big, counts] = [topicName('sql-orders'), topicName('sql-big'), topicName('sql-counts')];
    await createTopic(bootstrap, input, 3);
    await createTopic(bootstrap, big, 2);
    await createTopic(bootstrap, counts, 1);
    const orders: Order[] = Array.from({ length: 1_200 }, (_, i) => ({
      id: i,
      customer: i % 4,
      amount: (i * 37) % 100,
      ts: 1_767_225_600_000 + i * 50,
    }));
    await produceJson(bootstrap, input, orders);
    const common = `'connector' = 'kafka', 'properties.bootstrap.servers' = '${bootstrap}', 'format' = 'json'`;
    const text = `
      CREATE TEMPORARY TABLE orders (id BIGINT, customer INT, amount DOUBLE, ts BIGINT, t AS CAST(ts AS TIMESTAMP(3)), WATERMARK FOR t AS t - INTERVAL '5' SECOND)
        WITH (${common}, 'topic' = '${input}', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded' = 'true');
      CREATE TEMPORARY TABLE big (id BIGINT, amount DOUBLE) WITH (${common}, 'topic' = '${big}', 'sink.delivery-guarantee' = 'at-least-once');
      CREATE TEMPORARY TABLE counts (customer INT, wend TIMESTAMP(3), n BIGINT) WITH (${common}, 'topic' = '${counts}');
      EXECUTE STATEMENT SET BEGIN
        INSERT INTO big SELECT id, amount FROM orders WHERE amount >= 90;
        INSERT INTO counts SELECT customer, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(t), INTERVAL '10' SECOND)) GROUP BY customer, window_start, window_end;
      END;`;
    const session = new SqlSession(await SqlCatalog.open(BUILTIN_CAPABILITIES.map((c) => c.name)));
    const job = (await session.execute(text, { parallelism: 2 })).at(-1)!;
    assert.equal(job.kind, 'job');
    if (job.kind !== 'job') return;
    await runJob(sqlJobDefinition({ name: job.job.name, version: '1' }, job.job.script), { parallelism: 2 });
    const bigRows = (await readTopic(bootstrap, big)).map((r) => JSON.parse(r.value) as { id: number; amount: number });
    assert.deepEqual(
      bigRows.sort((a, b) => a.id - b.id),
      orders.filter((o) => o.amount >= 90).map((o) => ({ id: o.id, amount: o.amount })),
    );
    const countRows = (await readTopic(bootstrap, counts)).map(
      (r) => JSON.parse(r.value) as { customer: number; wend: number; n: number },
    );
    // 1,200 orders 50 ms apart: 6 windows of 200, 50 per customer.
    assert.equal(countRows.length, 24);
    assert.ok(
      countRows.every((r) => r.n === 50),
      JSON.stringify(countRows.slice(0, 3)),
    );
  });
});
