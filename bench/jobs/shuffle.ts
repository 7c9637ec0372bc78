// One channel's worth of records: bids from one source subtask, rebalanced to one sink subtask. With
// `apart=true` the sink is in a slot sharing group of its own, so on workers of one slot each it runs
// in the other process and every record crosses a data connection; otherwise both share a slot and the
// channel is in-process. Same records either way (the shuffle microbenchmark, bench/scale.ts).
import { defineJob } from 'clink';
import { bids, blackhole } from './bids.js';

export default defineJob({ name: 'shuffle', version: '1' }, (env) => {
  const received = bids(env, Number(env.params.count))
    .rebalance()
    .map((b) => b);
  if (env.params.apart === 'true') received.slotSharingGroup('receiver');
  received.sinkTo(blackhole);
});
