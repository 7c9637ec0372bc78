/**
 * Nexmark q11, user sessions: how many bids each bidder placed per session (10 s of inactivity ends one).
 * Only the bidder crosses the shuffle.
 */
import { defineJob, Windows } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export const GAP_MS = 10_000;

export default defineJob({ name: 'nexmark-q11', version: '1', description: 'user sessions' }, (env) => {
  const sessions = nexmarkEvents(env)
    .filter(isBid)
    .assignTimestamps((b) => b.dateTime)
    .map((b) => b.bidder)
    .keyBy((bidder) => bidder)
    .window(Windows.session(GAP_MS))
    .count()
    .name('bids per session');
  output(env, sessions, 'q11');
});
