/**
 * Nexmark q5, hot items: in each 10-second window sliding every 2 seconds, the auctions with the most
 * bids. Bids are counted per auction and window in parallel; then, per window, the counts meet on one
 * subtask (keyed by the window's end), which keeps the largest. Only the auction id crosses the
 * shuffle (its timestamp travels beside it), as a SQL planner would project it.
 */
import { defineJob, Windows, type WindowCount } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export interface Q5Row {
  auction: number;
  count: number;
  start: number;
  end: number;
}

export const SIZE_MS = 10_000;
export const SLIDE_MS = 2_000;

export default defineJob({ name: 'nexmark-q5', version: '1', description: 'hot items' }, (env) => {
  const counts = nexmarkEvents(env)
    .filter(isBid)
    .assignTimestamps((b) => b.dateTime)
    .map((b) => b.auction)
    .keyBy((auction) => auction)
    .window(Windows.sliding(SIZE_MS, SLIDE_MS))
    .count()
    .name('bids per auction and window');
  const hottest = counts
    .keyBy((c) => c.end)
    .window(Windows.tumbling(SLIDE_MS))
    .process<Q5Row>({
      process(_end, _window, all: WindowCount<number>[], out) {
        let max = 0;
        for (const c of all) if (c.count > max) max = c.count;
        for (const c of all)
          if (c.count === max) out.collect({ auction: c.key, count: c.count, start: c.start, end: c.end });
      },
    })
    .name('hottest per window');
  output(env, hottest, 'q5');
});
