// A keyed running count by auction: every bid crosses a hash exchange.
import { defineJob } from 'clink';
import { bids, blackhole } from './bids.js';

export default defineJob({ name: 'keyed-count', version: '1' }, (env) => {
  bids(env, Number(env.params.count))
    .keyBy((b) => b.auction)
    .count()
    .sinkTo(blackhole);
});
