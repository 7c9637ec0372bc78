/**
 * Checkpoint cost (local runtime, parallelism 1), with a checkpoint every second versus none: Nexmark
 * q5 (sliding-window counts per auction), and jobs holding 1 million keys of state: a keyed running
 * count, and a keyed event-time window (panes are keyed state too). A checkpoint's duration runs from
 * its trigger until its state, encoded as a worker encodes it, is written to a file. Reports
 * throughput, checkpoint durations and sizes, and the worst event-loop stall. Part of `npm run bench`;
 * alone: `node --import tsx bench/checkpoint.ts [--quick] [--job <part of a job's name>]`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { defineConnector, defineJob, startJob, Windows, type JobDefinition } from '../src/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { writeStateFile } from '../src/state/index.js';

const KEYS = 1_000_000;
const RECORDS = 6_000_000;
const Q5_EVENTS = 4_000_000;

const blackhole = defineConnector<never, unknown>({
  name: 'blackhole',
  sink: { createWriter: () => ({ write() {} }) },
});
const JOBS: { name: string; records: number; job: JobDefinition }[] = [
  {
    name: 'keyed count',
    records: RECORDS,
    job: defineJob({ name: 'ckpt-bench-count', version: '1' }, (env) => {
      env
        .fromSequence(0, RECORDS - 1)
        .keyBy((x) => x % KEYS)
        .count()
        .sinkTo(blackhole);
    }),
  },
  {
    // One pane per key until the end of input, when all of them fire.
    name: 'keyed window count',
    records: RECORDS / 2,
    job: defineJob({ name: 'ckpt-bench-window', version: '1' }, (env) => {
      env
        .fromSequence(0, RECORDS / 2 - 1)
        .assignTimestamps((x) => x)
        .keyBy((x) => x % KEYS)
        .window(Windows.tumbling(1e12))
        .count()
        .sinkTo(blackhole);
    }),
  },
];

export interface CheckpointBench {
  job: string;
  /** Keys of state (0: as many as the job makes). */
  keys: number;
  records: number;
  withoutRecordsPerSec: number;
  withRecordsPerSec: number;
  checkpoints: number;
  checkpointMsMedian: number;
  checkpointMsMax: number;
  checkpointBytes: number;
  worstLoopStallMsWithout: number;
  worstLoopStallMsWith: number;
}

async function run(
  job: JobDefinition,
  records: number,
  intervalMs: number,
  dir: string,
  params: Record<string, string> = {},
): Promise<{ rate: number; durations: number[]; bytes: number; stallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const exec = startJob(job, { parallelism: 1, params });
  const durations: number[] = [];
  let bytes = 0;
  let busy = false; // one checkpoint at a time
  const timer =
    intervalMs > 0
      ? setInterval(() => {
          if (busy) return;
          busy = true;
          const t0 = performance.now();
          exec
            .triggerCheckpoint()
            .then(async (snapshot) => {
              bytes = (await writeStateFile(join(dir, `chk-${snapshot.checkpointId}.state`), snapshot)).bytes;
              durations.push(performance.now() - t0);
            })
            .catch(() => undefined)
            .finally(() => (busy = false));
        }, intervalMs)
      : undefined;
  const t0 = performance.now();
  await exec.done;
  const wall = (performance.now() - t0) / 1000;
  if (timer) clearInterval(timer);
  h.disable();
  return { rate: records / wall, durations, bytes, stallMs: h.max / 1e6 };
}

/** `quick`: q5 with fewer events and the keyed count only. */
export async function runCheckpointBench(options: { quick?: boolean; job?: string } = {}): Promise<CheckpointBench[]> {
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-ckpt-'));
  try {
    const q5 = (
      await loadJobModule(fileURLToPath(new URL('../examples/nexmark/q5.ts', import.meta.url)), {
        cacheDir: join(dir, 'cache'),
      })
    ).job;
    const q5Events = options.quick ? Q5_EVENTS / 2 : Q5_EVENTS;
    const jobs = [
      {
        name: 'nexmark q5',
        records: q5Events,
        job: q5,
        params: { events: String(q5Events), sink: 'blackhole' },
        keys: 0,
      },
      ...(options.quick ? JOBS.slice(0, 1) : JOBS).map((j) => ({ ...j, params: {}, keys: KEYS })),
    ].filter((j) => options.job === undefined || j.name.includes(options.job));
    const out: CheckpointBench[] = [];
    const runs = options.quick ? 2 : 3;
    for (const { name, records, job, params, keys } of jobs) {
      await run(job, records, 0, dir, params); // warm-up
      // Alternate, so machine noise hits both alike; the median run of each.
      const without: Awaited<ReturnType<typeof run>>[] = [];
      const withCk: Awaited<ReturnType<typeof run>>[] = [];
      for (let i = 0; i < runs; i++) {
        without.push(await run(job, records, 0, dir, params));
        withCk.push(await run(job, records, 1_000, dir, params));
      }
      out.push(
        summary(
          name,
          keys,
          records,
          medianRun(without),
          medianRun(withCk),
          withCk.flatMap((r) => r.durations),
        ),
      );
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The run of median throughput. */
function medianRun<T extends { rate: number }>(runs: T[]): T {
  return [...runs].sort((a, b) => a.rate - b.rate)[Math.floor((runs.length - 1) / 2)]!;
}

function summary(
  job: string,
  keys: number,
  records: number,
  without: Awaited<ReturnType<typeof run>>,
  withCk: Awaited<ReturnType<typeof run>>,
  durations: number[],
): CheckpointBench {
  const sorted = [...durations].sort((a, b) => a - b);
  return {
    job,
    keys,
    records,
    withoutRecordsPerSec: without.rate,
    withRecordsPerSec: withCk.rate,
    checkpoints: sorted.length,
    checkpointMsMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
    checkpointMsMax: sorted.at(-1) ?? 0,
    checkpointBytes: withCk.bytes,
    worstLoopStallMsWithout: without.stallMs,
    worstLoopStallMsWith: withCk.stallMs,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const jobAt = process.argv.indexOf('--job');
  const job = jobAt > 0 ? process.argv[jobAt + 1] : undefined;
  process.stdout.write(
    JSON.stringify(await runCheckpointBench({ quick: process.argv.includes('--quick'), job })) + '\n',
  );
}
