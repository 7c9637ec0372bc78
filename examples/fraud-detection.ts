/**
 * Stateful process function: flag an account when a small transaction (< 1.00) is followed within one
 * minute (event time) by a large one (> 500.00): a classic card-testing pattern. Keyed state remembers
 * the small transaction; an event-time timer forgets it after the minute.
 *
 *   clink run examples/fraud-detection.ts --param count=200000
 */
import { defineJob } from 'clink';

interface Transaction {
  account: number;
  amount: number;
  ts: number;
}

interface Alert {
  account: number;
  small: number;
  large: number;
  at: string;
}

const SMALL = 1;
const LARGE = 500;
const WINDOW_MS = 60_000;

export default defineJob(
  { name: 'fraud-detection', version: '1', description: 'small-then-large transaction alerts' },
  (env) => {
    env
      .fromSource<Transaction>('datagen', {
        count: Number(env.params.count ?? 50_000),
        seed: 7,
        fields: {
          account: { kind: 'int', min: 1, max: 200 },
          amount: { kind: 'double', min: 0, max: 1_000 },
          ts: { kind: 'timestamp', startMs: Date.UTC(2026, 0, 1), stepMs: 100 },
        },
      })
      .name('transactions')
      .uid('transactions')
      // The detector depends on the order of an account's transactions. One source subtask (and its
      // chained timestamp assigner) keeps that order; with several, an account's transactions would
      // interleave from several splits or be rebalanced.
      .setParallelism(1)
      .assignTimestamps((t) => t.ts)
      .setParallelism(1)
      .keyBy((t) => t.account)
      .process<Alert>({
        processElement(t, ctx, out) {
          const flagged = ctx.state.value<{ amount: number; ts: number }>('small');
          const prior = flagged.value();
          if (prior && t.amount > LARGE) {
            out.collect({
              account: t.account,
              small: round(prior.amount),
              large: round(t.amount),
              at: new Date(t.ts).toISOString(),
            });
            ctx.timers.deleteEventTime(prior.ts + WINDOW_MS);
            flagged.clear();
          }
          if (t.amount < SMALL) {
            flagged.update({ amount: t.amount, ts: t.ts });
            ctx.timers.registerEventTime(t.ts + WINDOW_MS);
          }
        },
        onTimer(_ts, ctx) {
          ctx.state.value('small').clear();
        },
      })
      .name('detect')
      .uid('detect')
      .collect('alerts');
  },
);

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
