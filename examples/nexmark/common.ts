/**
 * What every Nexmark query shares: the event source and where results go. Parameters:
 *   events=N (default 1,000,000; "unbounded" runs forever), seed, eventsPerSecond (event time rate,
 *   default 10,000), sink=collect|blackhole|print (default collect).
 */
import type { Auction, Bid, DataStream, JobEnvironment, NexmarkEvent, Person } from 'clink';

export function nexmarkEvents(env: JobEnvironment): DataStream<NexmarkEvent> {
  const events = env.params.events ?? '1000000';
  return env
    .fromSource<NexmarkEvent>('nexmark', {
      ...(events === 'unbounded' ? {} : { events: Number(events) }),
      seed: Number(env.params.seed ?? 0),
      eventsPerSecond: Number(env.params.eventsPerSecond ?? 10_000),
    })
    .name('nexmark');
}

export const isBid = (e: NexmarkEvent): e is Bid => e.kind === 'bid';
export const isAuction = (e: NexmarkEvent): e is Auction => e.kind === 'auction';
export const isPerson = (e: NexmarkEvent): e is Person => e.kind === 'person';

/** The query's results: collected under `name`, dropped (benchmarks) or printed. */
export function output<T>(env: JobEnvironment, stream: DataStream<T>, name: string): void {
  const sink = env.params.sink ?? 'collect';
  if (sink === 'blackhole') stream.sinkTo('blackhole').name('blackhole');
  else if (sink === 'print') stream.print();
  else stream.collect(name);
}
