/**
 * Running totals per sensor into PostgreSQL: generated readings, summed per sensor over 10-second
 * windows, upserted by sensor into `sensor_totals (sensor int primary key, total bigint, window_end bigint)`,
 * exactly once by two-phase commit (the server needs max_prepared_transactions > 0):
 *
 *   psql -c 'CREATE TABLE sensor_totals (sensor int PRIMARY KEY, total bigint, window_end bigint)'
 *   clink run examples/postgres-upsert.ts --checkpoint-dir /tmp/ckpt --checkpoint-interval-ms 2000 \
 *     --param url=postgres://postgres:pw@127.0.0.1:5432/postgres
 */
import { defineJob, Windows } from 'clink';

export default defineJob(
  { name: 'postgres-upsert', version: '1', description: 'windowed sums upserted into PostgreSQL' },
  (env) => {
    env
      .fromSource<{ sensor: number; value: number; ts: number }>('datagen', {
        count: Number(env.params.count ?? 100_000),
        rowsPerSecond: 5_000,
        fields: {
          sensor: { kind: 'int', min: 1, max: 20 },
          value: { kind: 'int', min: 0, max: 100 },
          ts: { kind: 'timestamp', stepMs: 2 },
        },
      })
      .uid('readings')
      .assignTimestamps((r) => r.ts)
      .keyBy((r) => r.sensor)
      .window(Windows.tumbling(10_000))
      .aggregate({
        create: () => 0,
        add: (r, sum: number) => sum + r.value,
        result: (total, sensor, w) => ({ sensor, total, window_end: w.end }),
      })
      .uid('totals')
      .sinkTo('postgres', {
        connectionString: env.params.url ?? 'env://DATABASE_URL',
        table: 'sensor_totals',
        mode: 'upsert',
        primaryKey: ['sensor'],
        delivery: 'exactly-once',
        transactionIdPrefix: 'postgres-upsert',
      })
      .uid('sensor-totals');
  },
);
