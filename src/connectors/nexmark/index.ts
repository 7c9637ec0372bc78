/**
 * nexmark: the Nexmark benchmark's events (people, auctions, bids) as a source. Deterministic for a
 * seed and splittable: event n is in split n mod 128 and a subtask owns a range of splits
 * (connectors/index-space.ts), so the subtasks together emit the single generator's stream at any
 * parallelism, and a restore at another one divides what is left exactly. Bounded by `events`, unbounded without it.
 * Event time (`dateTime`) advances 1000 / `eventsPerSecond` ms per event whatever the wall clock does;
 * `rateLimited` also paces emission to `eventsPerSecond` in wall-clock time.
 */
import { z } from 'zod';
import type { Connector, SourceOutput } from '../../sdk/index.js';
import { IndexSpaceCursor, rescaleIndexSpace } from '../index-space.js';
import { parseOptions, RatePacer } from '../options.js';
import { DEFAULT_BASE_TIME_MS, NexmarkGenerator, type NexmarkEvent } from './generator.js';

export {
  NexmarkGenerator,
  eventKind,
  DEFAULT_BASE_TIME_MS,
  FIRST_AUCTION_ID,
  FIRST_CATEGORY_ID,
  FIRST_PERSON_ID,
  NUM_CATEGORIES,
  type Auction,
  type Bid,
  type NexmarkConfig,
  type NexmarkEvent,
  type Person,
} from './generator.js';

export const NexmarkOptions = z
  .object({
    /** Events in all (over every subtask); absent = unbounded. */
    events: z.number().int().min(0).optional(),
    /** The rate event time advances at (events per second of event time). */
    eventsPerSecond: z.number().positive().default(10_000),
    seed: z.number().int().default(0),
    /** Event time of event 0 (ms since the epoch). */
    baseTimeMs: z.number().int().default(DEFAULT_BASE_TIME_MS),
    /** Also pace emission to eventsPerSecond in wall-clock time (a steady load instead of flat out). */
    rateLimited: z.boolean().default(false),
  })
  .strict();
export type NexmarkOptions = z.input<typeof NexmarkOptions>;

/** The generator a nexmark source with these options uses: `generator.event(n)` for n = 0, 1, 2, ... */
export function nexmarkGenerator(options: NexmarkOptions = {}): NexmarkGenerator {
  const o = NexmarkOptions.parse(options);
  return new NexmarkGenerator({ seed: o.seed, eventsPerSecond: o.eventsPerSecond, baseTimeMs: o.baseTimeMs });
}

export const nexmark: Connector<NexmarkEvent> = {
  name: 'nexmark',
  source: {
    validate: (o) => parseOptions('nexmark', NexmarkOptions, o),
    createReader(o: z.infer<typeof NexmarkOptions>, ctx) {
      const gen = new NexmarkGenerator({ seed: o.seed, eventsPerSecond: o.eventsPerSecond, baseTimeMs: o.baseTimeMs });
      const events = o.events ?? Number.POSITIVE_INFINITY;
      const cursor = new IndexSpaceCursor(ctx.subtaskIndex, ctx.parallelism);
      let sink: SourceOutput<NexmarkEvent> | undefined;
      const collect = (n: number): void => sink!.collect(gen.event(n));
      const emit = (out: SourceOutput<NexmarkEvent>, n: number): number => {
        sink = out;
        return cursor.advance(n, events, collect);
      };
      const pacer = o.rateLimited ? new RatePacer(o.eventsPerSecond * cursor.share, ctx.signal) : undefined;
      return {
        // Flat out, a read is synchronous: no promise per batch on the benchmark's hot path.
        read: pacer
          ? async (out: SourceOutput<NexmarkEvent>, max: number) => {
              pacer.emitted(emit(out, await pacer.allowance(max)));
              return cursor.done(events) ? 'END' : 'MORE';
            }
          : (out: SourceOutput<NexmarkEvent>, max: number) => {
              emit(out, max);
              return cursor.done(events) ? 'END' : 'MORE';
            },
        snapshot: () => cursor.snapshot(),
        restore(position) {
          cursor.restore(position, `nexmark source '${ctx.operatorName}'`);
        },
      };
    },
    rescale: (positions, parallelism) => rescaleIndexSpace(positions, parallelism),
  },
};
