// q0: pass-through. Forward edges only (chained), so no record leaves its process.
import { defineJob } from 'clink';
import { bids, blackhole } from './bids.js';

export default defineJob({ name: 'q0', version: '1' }, (env) => {
  bids(env, Number(env.params.count)).sinkTo(blackhole);
});
