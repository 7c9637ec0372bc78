/**
 * Nexmark q7, highest bid: per 10-second tumbling window, the bids at the highest price. Each auction's
 * best bids per window are found in parallel; then, per window (keyed by its end), the best of those.
 */
import { defineJob, Windows, type Bid } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export interface Q7Row {
  auction: number;
  price: number;
  bidder: number;
  dateTime: number;
  end: number;
}

export const WINDOW_MS = 10_000;

interface Best {
  price: number;
  bids: Bid[];
}

export default defineJob({ name: 'nexmark-q7', version: '1', description: 'highest bid' }, (env) => {
  const local = nexmarkEvents(env)
    .filter(isBid)
    .assignTimestamps((b) => b.dateTime)
    .keyBy((b) => b.auction)
    .window(Windows.tumbling(WINDOW_MS))
    .aggregate<Best, { end: number; best: Best }>({
      create: () => ({ price: -1, bids: [] }),
      add(b, acc) {
        if (b.price > acc.price) {
          acc.price = b.price;
          acc.bids = [b];
        } else if (b.price === acc.price) acc.bids.push(b);
        return acc;
      },
      result: (acc, _auction, window) => ({ end: window.end, best: acc }),
    })
    .name('best bids per auction');
  const highest = local
    .keyBy((l) => l.end)
    .window(Windows.tumbling(WINDOW_MS))
    .process<Q7Row>({
      process(end, _window, all, out) {
        let max = -1;
        for (const l of all) if (l.best.price > max) max = l.best.price;
        for (const l of all) {
          if (l.best.price !== max) continue;
          for (const b of l.best.bids)
            out.collect({ auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, end });
        }
      },
    })
    .name('highest per window');
  output(env, highest, 'q7');
});
