/**
 * Benchmark cases: each query run on the engine (local runtime, parallelism 1) and as a hand-written
 * loop doing the same work, the ceiling for one Node core. Both generate the same records and write
 * each result to the same sink writer. Run one case per process (see run.ts) so cases do not share
 * JIT state.
 *
 * Records are Nexmark-like bids generated per record (as Nexmark's q0-q2 do), except the first case,
 * which passes bare sequence numbers: the engine's per-record overhead at its most visible.
 */
import { fileURLToPath } from 'node:url';
import {
  defineConnector,
  defineJob,
  runJob,
  Windows,
  type DataStream,
  type JobEnvironment,
  type SourceOutput,
} from '../src/index.js';

export interface CaseResult {
  name: string;
  records: number;
  engineRecordsPerSec: number;
  loopRecordsPerSec: number;
}

let sink = 0;
/** The one sink writer both the engine and the loops write every record to. */
const writer = {
  write(v: unknown): void {
    sink ^= typeof v === 'number' ? v : 1;
  },
};
const blackhole = defineConnector<never, unknown>({ name: 'blackhole', sink: { createWriter: () => writer } });

interface Bid {
  auction: number;
  bidder: number;
  price: number;
  channel: string;
  dateTime: number;
}

const CHANNELS = ['Google', 'Facebook', 'Baidu', 'Apple'];

function makeBid(i: number): Bid {
  return {
    auction: 1_000 + ((i * 2_654_435_761) % 1_000),
    bidder: 2_000 + ((i * 40_503) % 5_000),
    price: 100 + ((i * 31) % 10_000),
    channel: CHANNELS[i & 3]!,
    dateTime: i,
  };
}

const N = 5_000_000;
const WINDOW_N = 2_000_000;
const WINDOW_MS = 10_000;

/** A source that generates bids 0..n-1, as the loops do. */
function bids(env: JobEnvironment, n: number): DataStream<Bid> {
  const source = defineConnector<Bid, never>({
    name: 'bids',
    source: {
      createReader: () => {
        let i = 0;
        return {
          read(out: SourceOutput<Bid>, max: number) {
            const stop = Math.min(n, i + max);
            for (; i < stop; i++) out.collect(makeBid(i));
            return i >= n ? 'END' : 'MORE';
          },
        };
      },
    },
  });
  return env.fromSource(source);
}

interface Case {
  records: number;
  engine: (env: JobEnvironment) => void;
  loop: () => void;
}

const cases: Record<string, Case> = {
  'pass-through (numbers)': {
    records: N,
    engine: (env) => void env.fromSequence(1, N).sinkTo(blackhole),
    loop: () => {
      for (let i = 1; i <= N; i++) writer.write(i);
    },
  },
  'pass-through (q0)': {
    records: N,
    engine: (env) => void bids(env, N).sinkTo(blackhole),
    loop: () => {
      for (let i = 0; i < N; i++) writer.write(makeBid(i));
    },
  },
  'map (q1)': {
    records: N,
    engine: (env) => void bids(env, N).map((b) => ({ ...b, price: b.price * 0.908 })).sinkTo(blackhole),
    loop: () => {
      for (let i = 0; i < N; i++) {
        const b = makeBid(i);
        writer.write({ ...b, price: b.price * 0.908 });
      }
    },
  },
  'filter (q2)': {
    records: N,
    engine: (env) => void bids(env, N).filter((b) => b.auction % 123 === 0).sinkTo(blackhole),
    loop: () => {
      for (let i = 0; i < N; i++) {
        const b = makeBid(i);
        if (b.auction % 123 === 0) writer.write(b);
      }
    },
  },
  'keyed tumbling-window count': {
    records: WINDOW_N,
    engine: (env) =>
      void bids(env, WINDOW_N)
        .assignTimestamps((b) => b.dateTime)
        .keyBy((b) => b.auction)
        .window(Windows.tumbling(WINDOW_MS))
        .count()
        .sinkTo(blackhole),
    loop: () => {
      let start = 0;
      let counts = new Map<number, number>();
      const fire = (): void => {
        for (const [key, count] of counts) writer.write({ key, start, end: start + WINDOW_MS, count });
        counts = new Map();
      };
      for (let i = 0; i < WINDOW_N; i++) {
        const b = makeBid(i);
        const s = b.dateTime - (b.dateTime % WINDOW_MS);
        if (s !== start) {
          fire();
          start = s;
        }
        counts.set(b.auction, (counts.get(b.auction) ?? 0) + 1);
      }
      fire();
    },
  },
};

export const CASE_NAMES = Object.keys(cases);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export async function runCase(name: string, runs = 5): Promise<CaseResult> {
  const c = cases[name]!;
  const job = defineJob({ name: 'bench', version: '1' }, c.engine);
  const engine: number[] = [];
  const loop: number[] = [];
  // one warm-up each, then alternate so machine noise hits both alike
  await runJob(job);
  c.loop();
  for (let r = 0; r < runs; r++) {
    let t = performance.now();
    await runJob(job);
    engine.push(c.records / ((performance.now() - t) / 1000));
    t = performance.now();
    c.loop();
    loop.push(c.records / ((performance.now() - t) / 1000));
  }
  return { name, records: c.records, engineRecordsPerSec: median(engine), loopRecordsPerSec: median(loop) };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2]) {
  const result = await runCase(process.argv[2]);
  process.stdout.write(JSON.stringify({ ...result, sinkChecksum: sink }) + '\n');
}
