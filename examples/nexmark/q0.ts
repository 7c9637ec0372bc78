/** Nexmark q0, pass-through: every bid, projected. Measures the engine's per-record cost. */
import { defineJob } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export default defineJob({ name: 'nexmark-q0', version: '1', description: 'pass-through' }, (env) => {
  const bids = nexmarkEvents(env)
    .filter(isBid)
    .map((b) => ({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra }));
  output(env, bids, 'q0');
});
