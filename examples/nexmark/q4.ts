/**
 * Nexmark q4, average price per category: the winning (highest) bid of each auction, among the bids
 * placed while it ran ([dateTime, expires]), averaged per category. An auction closes when the
 * watermark passes its expiry (an event-time timer); bids for an auction not yet seen wait for it.
 * Emits the running average of a category each time one of its auctions closes.
 */
import { defineJob, type Auction, type Bid } from 'clink';
import { isAuction, isBid, nexmarkEvents, output } from './common.js';

export interface Q4Row {
  category: number;
  avgPrice: number;
}

interface Open {
  category: number;
  dateTime: number;
  expires: number;
  max: number;
}

/** How long (event time) a bid for an auction not seen yet, or an auction's closed marker, is kept. */
const WAIT_MS = 10_000;

export default defineJob({ name: 'nexmark-q4', version: '1', description: 'average price per category' }, (env) => {
  const events = nexmarkEvents(env).assignTimestamps((e) => e.dateTime);
  const winners = events
    .filter(isAuction)
    .connect(events.filter(isBid))
    .keyBy(
      (a) => a.id,
      (b) => b.auction,
    )
    .process<{ category: number; price: number }>({
      processElement1(a: Auction, ctx) {
        const open: Open = { category: a.category, dateTime: a.dateTime, expires: a.expires, max: -1 };
        const early = ctx.state.list<[number, number]>('early');
        for (const [t, price] of early.get())
          if (t >= a.dateTime && t <= a.expires && price > open.max) open.max = price;
        early.clear();
        ctx.state.value<Open>('open').update(open);
        ctx.timers.registerEventTime(a.expires);
      },
      processElement2(b: Bid, ctx) {
        const state = ctx.state.value<Open | 'closed'>('open');
        const open = state.value();
        if (open === 'closed') return;
        if (open === undefined) {
          ctx.state.list<[number, number]>('early').add([b.dateTime, b.price]);
          ctx.timers.registerEventTime(b.dateTime + WAIT_MS);
        } else if (b.dateTime >= open.dateTime && b.dateTime <= open.expires && b.price > open.max) {
          open.max = b.price;
          state.update(open);
        }
      },
      onTimer(ts, ctx, out) {
        const state = ctx.state.value<Open | 'closed'>('open');
        const open = state.value();
        if (open === undefined) {
          ctx.state.list('early').clear(); // bids for an auction that never came
        } else if (open === 'closed') {
          state.clear();
        } else if (ts === open.expires) {
          if (open.max >= 0) out.collect({ category: open.category, price: open.max });
          state.update('closed');
          ctx.timers.registerEventTime(open.expires + WAIT_MS);
        }
      },
    })
    .name('winning bids');
  const averages = winners
    .keyBy((w) => w.category)
    .process<Q4Row>({
      processElement(w, ctx, out) {
        const s = ctx.state.value<{ n: number; sum: number }>('avg');
        const acc = s.value() ?? { n: 0, sum: 0 };
        acc.n++;
        acc.sum += w.price;
        s.update(acc);
        out.collect({ category: w.category, avgPrice: acc.sum / acc.n });
      },
    })
    .name('average per category');
  output(env, averages, 'q4');
});
