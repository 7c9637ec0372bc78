// Nexmark-like bids from a generator source, shared by the data-plane benchmark jobs.
import { defineConnector, type JobEnvironment, type SourceOutput } from 'clink';

export interface Bid {
  auction: number;
  bidder: number;
  price: number;
  channel: string;
  dateTime: number;
}

const CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];

/** `count` bids in total, split across the source's parallel subtasks. */
export function bids(env: JobEnvironment, count: number) {
  const source = defineConnector<Bid, never>({
    name: 'bids',
    source: {
      createReader: (_o, ctx) => {
        let i = ctx.subtaskIndex;
        return {
          read(out: SourceOutput<Bid>, max: number) {
            for (let n = 0; n < max && i < count; n++, i += ctx.parallelism) {
              out.collect({
                auction: 1_000 + ((i * 2_654_435_761) % 1_000),
                bidder: 2_000 + ((i * 40_503) % 5_000),
                price: 100 + ((i * 31) % 10_000),
                channel: CHANNELS[i & 3]!,
                dateTime: i,
              });
            }
            return i >= count ? 'END' : 'MORE';
          },
        };
      },
    },
  });
  return env.fromSource(source);
}

export const blackhole = defineConnector<never, unknown>({
  name: 'blackhole',
  sink: { createWriter: () => ({ write() {} }) },
});
