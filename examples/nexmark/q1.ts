/** Nexmark q1, currency conversion: each bid's price from dollars to euros. */
import { defineJob } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export default defineJob({ name: 'nexmark-q1', version: '1', description: 'currency conversion' }, (env) => {
  const euros = nexmarkEvents(env)
    .filter(isBid)
    .map((b) => ({
      auction: b.auction,
      bidder: b.bidder,
      price: 0.908 * b.price,
      dateTime: b.dateTime,
      extra: b.extra,
    }));
  output(env, euros, 'q1');
});
