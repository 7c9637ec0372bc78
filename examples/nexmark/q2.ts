/** Nexmark q2, selection: the bids on every 123rd auction. */
import { defineJob } from 'clink';
import { isBid, nexmarkEvents, output } from './common.js';

export default defineJob({ name: 'nexmark-q2', version: '1', description: 'selection' }, (env) => {
  const selected = nexmarkEvents(env)
    .filter(isBid)
    .filter((b) => b.auction % 123 === 0)
    .map((b) => ({ auction: b.auction, price: b.price }));
  output(env, selected, 'q2');
});
