/**
 * Keyed tumbling-window aggregation over generated sensor readings: per sensor and 5 minutes, the
 * count, mean and maximum reading. Readings arrive up to 2 s out of order; watermarks allow for that.
 *
 *   clink run examples/window-aggregation.ts --parallelism 2 --param count=1000000
 *   clink run examples/window-aggregation.ts --param count=300000 --param rate=10000   (30 s)
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

const WINDOW_MS = 5 * 60_000;

export default defineJob(
  { name: 'sensor-stats', version: '1', description: 'per-sensor stats per 5 minutes' },
  (env) => {
    env
      .fromSource<Reading>('datagen', {
        count: Number(env.params.count ?? 100_000),
        // rate=N paces the readings (N a second), for a job that runs long enough to watch.
        ...(env.params.rate ? { rowsPerSecond: Number(env.params.rate) } : {}),
        seed: 42,
        fields: {
          sensor: { kind: 'oneOf', values: ['boiler', 'chiller', 'intake', 'exhaust'] },
          celsius: { kind: 'double', min: -10, max: 90 },
          ts: { kind: 'timestamp', startMs: Date.UTC(2026, 0, 1, 0, 0, 2), stepMs: 10, jitterMs: 2_000 },
        },
      })
      .name('readings')
      .uid('readings')
      .assignTimestamps((r) => r.ts, { maxOutOfOrdernessMs: 2_000 })
      .keyBy((r) => r.sensor)
      .window(Windows.tumbling(WINDOW_MS))
      .aggregate<Stats, { window: string; sensor: string; count: number; mean: number; max: number }>({
        create: () => ({ count: 0, sum: 0, max: Number.NEGATIVE_INFINITY }),
        add: (r, acc) => ({ count: acc.count + 1, sum: acc.sum + r.celsius, max: Math.max(acc.max, r.celsius) }),
        result: (acc, sensor, window) => ({
          window: `${hhmm(window.start)}-${hhmm(window.end)}`,
          sensor,
          count: acc.count,
          mean: Math.round((acc.sum / acc.count) * 100) / 100,
          max: Math.round(acc.max * 100) / 100,
        }),
      })
      .name('stats per window')
      .uid('stats')
      .collect('sensor stats per 5 minutes');
  },
);

function hhmm(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}
