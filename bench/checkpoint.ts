/**
 * Checkpoint cost: a keyed running count over 1 million keys (local runtime), with a checkpoint every
 * second versus none. Reports throughput, checkpoint durations and the worst event-loop stall (the
 * snapshot is a synchronous deep copy today, about 1.5 s at 1 million keys, so a run with checkpoints
 * is capped at 20 s and its rate taken from the records its source read). Not part of `npm run bench`
 * until snapshots are copy-on-write: `node --import tsx bench/checkpoint.ts`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { defineConnector, defineJob, startJob } from '../src/index.js';

const KEYS = 1_000_000;
const RECORDS = 3_000_000;

const blackhole = defineConnector<never, unknown>({ name: 'blackhole', sink: { createWriter: () => ({ write() {} }) } });
const job = defineJob({ name: 'ckpt-bench', version: '1' }, (env) => {
  env.fromSequence(0, RECORDS - 1).keyBy((x) => x % KEYS).count().sinkTo(blackhole);
});

export interface CheckpointBench {
  keys: number;
  records: number;
  withoutRecordsPerSec: number;
  withRecordsPerSec: number;
  checkpoints: number;
  checkpointMsMedian: number;
  checkpointMsMax: number;
  worstLoopStallMsWithout: number;
  worstLoopStallMsWith: number;
}

async function run(intervalMs: number): Promise<{ rate: number; durations: number[]; stallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const exec = startJob(job, { parallelism: 1 });
  const durations: number[] = [];
  let busy = false; // one checkpoint at a time
  const timer =
    intervalMs > 0
      ? setInterval(() => {
          if (busy) return;
          busy = true;
          const t0 = performance.now();
          exec.triggerCheckpoint().then(
            () => {
              durations.push(performance.now() - t0);
              busy = false;
            },
            () => (busy = false),
          );
        }, intervalMs)
      : undefined;
  const cap = setTimeout(() => exec.cancel('bench time cap'), 20_000);
  const t0 = performance.now();
  await exec.done.catch(() => undefined);
  const wall = (performance.now() - t0) / 1000;
  clearTimeout(cap);
  if (timer) clearInterval(timer);
  h.disable();
  const read = exec.metrics()[0]!.recordsIn;
  return { rate: read / wall, durations, stallMs: h.max / 1e6 };
}

export async function runCheckpointBench(): Promise<CheckpointBench> {
  await run(0); // warm-up
  const without = await run(0);
  const withCk = await run(1_000);
  const sorted = [...withCk.durations].sort((a, b) => a - b);
  return {
    keys: KEYS,
    records: RECORDS,
    withoutRecordsPerSec: without.rate,
    withRecordsPerSec: withCk.rate,
    checkpoints: sorted.length,
    checkpointMsMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
    checkpointMsMax: sorted.at(-1) ?? 0,
    worstLoopStallMsWithout: without.stallMs,
    worstLoopStallMsWith: withCk.stallMs,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runCheckpointBench()) + '\n');
}
