// One stage far slower than its input: a datagen offering `rate` rows/s, rebalanced to a map spinning
// `slowUs` a row, written by the transactional file sink under `out` (issue 52's run). Every id is a
// line of its own, so a run can be checked record by record; `count` bounds the rows (unbounded if unset).
import { defineJob } from 'clink';

export default defineJob({ name: 'backpressure', version: '1' }, (env) => {
  const slowMs = Number(env.params.slowUs ?? 5_000) / 1000;
  env
    .fromSource<{ id: number }>('datagen', {
      rowsPerSecond: Number(env.params.rate ?? 40_000),
      fields: { id: { kind: 'sequence', start: 0 } },
      ...(env.params.count ? { count: Number(env.params.count) } : {}),
    })
    .rebalance()
    .map((r) => {
      const until = performance.now() + slowMs;
      while (performance.now() < until);
      return String(r.id);
    })
    .sinkTo('file', { path: env.params.out!, format: 'lines' });
});
