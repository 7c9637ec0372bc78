/**
 * `fromSequence(from, to)`: the numbers from..to inclusive, one contiguous range per subtask. Its
 * position is the ranges it has left, so a restore at another parallelism deals what every subtask had
 * left out again in contiguous pieces of equal size.
 */
import { z } from 'zod';
import type { Connector, SourceOutput } from '../../sdk/index.js';
import { parseOptions } from '../options.js';

const Options = z
  .object({ from: z.number().int(), to: z.number().int(), nonParallel: z.boolean().optional() })
  .strict();
type Options = z.infer<typeof Options>;

/** [start, end) pairs, in order. */
type Ranges = [number, number][];

/** Subtask `index` of `parallelism`'s share of the numbers, before it has read any. */
function initialRange(o: Options, index: number, parallelism: number): [number, number] {
  const total = o.to - o.from + 1;
  return [o.from + Math.floor((total * index) / parallelism), o.from + Math.floor((total * (index + 1)) / parallelism)];
}

/** What a position says is left; `{ next }` is the form before rescaling existed (one range, its end implied). */
function rangesOf(position: unknown, o: Options, index: number, parallelism: number): Ranges {
  const p = position as { ranges?: Ranges; next?: number } | undefined;
  const [start, end] = initialRange(o, index, parallelism);
  if (p?.ranges) return p.ranges.map(([a, b]) => [a, b]);
  return [[p?.next ?? start, end]];
}

export const sequence: Connector<number> = {
  name: 'sequence',
  source: {
    validate: (o) => parseOptions('sequence', Options, o),
    createReader(o: Options, ctx) {
      let ranges: Ranges = [initialRange(o, ctx.subtaskIndex, ctx.parallelism)];
      const drop = (): void => {
        while (ranges.length > 0 && ranges[0]![0] >= ranges[0]![1]) ranges.shift();
      };
      drop();
      return {
        read(out: SourceOutput<number>, max: number) {
          let n = 0;
          while (n < max && ranges.length > 0) {
            const r = ranges[0]!;
            const stop = Math.min(r[1], r[0] + (max - n));
            for (let i = r[0]; i < stop; i++) out.collect(i);
            n += stop - r[0];
            r[0] = stop;
            drop();
          }
          return ranges.length === 0 ? 'END' : 'MORE';
        },
        snapshot: () => ({ ranges: ranges.map(([a, b]) => [a, b]) }),
        restore(position) {
          ranges = rangesOf(position, o, ctx.subtaskIndex, ctx.parallelism);
          drop();
        },
      };
    },
    rescale(positions, parallelism, o: Options) {
      const left = positions.flatMap((p, i) => rangesOf(p, o, i, positions.length)).filter(([a, b]) => a < b);
      const total = left.reduce((n, [a, b]) => n + b - a, 0);
      // Walk the ranges left, cutting them into `parallelism` pieces of (nearly) equal size.
      const out: { ranges: Ranges }[] = [];
      let k = 0;
      let at = left[0]?.[0] ?? 0;
      for (let s = 0; s < parallelism; s++) {
        let want = Math.floor((total * (s + 1)) / parallelism) - Math.floor((total * s) / parallelism);
        const mine: Ranges = [];
        while (want > 0) {
          const [, b] = left[k]!;
          const take = Math.min(want, b - at);
          mine.push([at, at + take]);
          want -= take;
          at += take;
          if (at >= b && k + 1 < left.length) at = left[++k]![0];
        }
        out.push({ ranges: mine });
      }
      return out;
    },
  },
};
