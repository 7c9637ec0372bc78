// One keyed ValueState per key over `keys` distinct keys: the sequence 0..2*keys-1 keyed by x % keys,
// so the first pass creates every key's state and the second finds it. A key whose count reaches 2
// is emitted once; a count past 2 (a record counted twice) fails the job. At the end of input one
// line says how many keys reached 2 and the sum of those keys: exact only if every key's state
// survived every restore and no record was counted twice.
import { defineJob, Windows } from 'clink';

export default defineJob({ name: 'big-state', version: '1' }, (env) => {
  const keys = Number(env.params.keys);
  env
    .fromSequence(0, 2 * keys - 1)
    .keyBy((x) => x % keys)
    .process<number>({
      processElement(_x, ctx, out) {
        const seen = ctx.state.value<number>('seen');
        const n = (seen.value() ?? 0) + 1;
        if (n > 2) throw new Error(`key ${String(ctx.key)} counted ${n} times`);
        seen.update(n);
        if (n === 2) out.collect(ctx.key as number);
      },
    })
    .assignTimestamps(() => 0)
    .windowAll(Windows.tumbling(1e15))
    .aggregate({
      create: () => ({ keys: 0, sum: 0 }),
      add: (k: number, a: { keys: number; sum: number }) => ({ keys: a.keys + 1, sum: a.sum + k }),
      result: (a) => a,
    })
    .sinkTo('file', { path: env.params.out! });
});
