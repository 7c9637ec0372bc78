/** `fromSequence(from, to)`: the numbers from..to inclusive, one contiguous range per subtask. */
import { z } from 'zod';
import type { Connector, SourceOutput } from '../../sdk/index.js';
import { parseOptions } from '../options.js';

const Options = z.object({ from: z.number().int(), to: z.number().int(), nonParallel: z.boolean().optional() }).strict();

export const sequence: Connector<number> = {
  name: 'sequence',
  source: {
    validate: (o) => parseOptions('sequence', Options, o),
    createReader(o: z.infer<typeof Options>, ctx) {
      const total = o.to - o.from + 1;
      const lo = Math.floor((total * ctx.subtaskIndex) / ctx.parallelism);
      const hi = Math.floor((total * (ctx.subtaskIndex + 1)) / ctx.parallelism);
      let next = o.from + lo;
      const end = o.from + hi; // exclusive
      return {
        read(out: SourceOutput<number>, max: number) {
          const stop = Math.min(end, next + max);
          for (let i = next; i < stop; i++) out.collect(i);
          next = stop;
          return next >= end ? 'END' : 'MORE';
        },
        snapshot: () => ({ next }),
        restore(position) {
          next = (position as { next: number }).next;
        },
      };
    },
  },
};
