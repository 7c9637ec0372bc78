/**
 * Keyed tumbling-window aggregation over generated sensor readings: per sensor and minute, the count,
 * mean and maximum reading. Readings arrive up to 2 s out of order; watermarks allow for that.
 *
 *   clink run examples/window-aggregation.ts --parallelism 2 --param count=1000000
 */
import { defineJob, Windows } from 'clink';

interface Reading {
  sensor: string;
  celsius: number;
  ts: number;
}

interface Stats {
  count: number;
  sum: number;
  max: number;
}

export default defineJob({ name: 'sensor-stats', version: '1', description: 'per-sensor stats per minute' }, (env) => {
  env
    .fromSource<Reading>('datagen', {
      count: Number(env.params.count ?? 100_000),
      seed: 42,
      fields: {
        sensor: { kind: 'oneOf', values: ['boiler', 'chiller', 'intake', 'exhaust'] },
        celsius: { kind: 'double', min: -10, max: 90 },
        ts: { kind: 'timestamp', startMs: Date.UTC(2026, 0, 1), stepMs: 10, jitterMs: 2_000 },
      },
    })
    .name('readings')
    .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 2_000 })
    .keyBy((r) => r.sensor)
    .window(Windows.tumbling(60_000))
    .aggregate<Stats, { sensor: string; minute: string; count: number; mean: number; max: number }>({
      create: () => ({ count: 0, sum: 0, max: Number.NEGATIVE_INFINITY }),
      add: (r, acc) => ({ count: acc.count + 1, sum: acc.sum + r.celsius, max: Math.max(acc.max, r.celsius) }),
      result: (acc, sensor, window) => ({
        sensor,
        minute: new Date(window.start).toISOString().slice(11, 16),
        count: acc.count,
        mean: Math.round((acc.sum / acc.count) * 100) / 100,
        max: Math.round(acc.max * 100) / 100,
      }),
    })
    .name('stats per minute')
    .collect('per-window sums');
});
