/**
 * Nexmark q12, processing-time windows: bids per bidder in 10-second windows of the wall clock. Only the
 * bidder crosses the shuffle.
 */
import { defineJob, Windows } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export const WINDOW_MS = 10_000;

export default defineJob({ name: 'nexmark-q12', version: '1', description: 'processing-time windows' }, (env) => {
  const counts = nexmarkEvents(env)
    .filter(isBid)
    .map((b) => b.bidder)
    .keyBy((bidder) => bidder)
    .window(Windows.tumbling(WINDOW_MS), { time: 'processing' })
    .count()
    .name('bids per bidder and window');
  output(env, counts, 'q12');
});
