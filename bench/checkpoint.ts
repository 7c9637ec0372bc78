/**
 * Checkpoint cost: a keyed running count over 1 million keys (local runtime), with a checkpoint every
 * second versus none. A checkpoint's duration runs from its trigger until its state, encoded as a
 * worker encodes it, is written to a file. Reports throughput, checkpoint durations and sizes, and the
 * worst event-loop stall. Part of `npm run bench`; alone: `node --import tsx bench/checkpoint.ts`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { defineConnector, defineJob, startJob } from '../src/index.js';
import { statePackr } from '../src/state/index.js';

const KEYS = 1_000_000;
const RECORDS = 6_000_000;

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
  checkpointBytes: number;
  worstLoopStallMsWithout: number;
  worstLoopStallMsWith: number;
}

async function run(intervalMs: number, dir: string): Promise<{ rate: number; durations: number[]; bytes: number; stallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  const exec = startJob(job, { parallelism: 1 });
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
              const encoded = statePackr.pack(snapshot);
              await writeFile(join(dir, `chk-${snapshot.checkpointId}.state`), encoded);
              durations.push(performance.now() - t0);
              bytes = encoded.length;
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
  return { rate: RECORDS / wall, durations, bytes, stallMs: h.max / 1e6 };
}

export async function runCheckpointBench(): Promise<CheckpointBench> {
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-ckpt-'));
  try {
    await run(0, dir); // warm-up
    const without = await run(0, dir);
    const withCk = await run(1_000, dir);
    return summary(without, withCk);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function summary(without: Awaited<ReturnType<typeof run>>, withCk: Awaited<ReturnType<typeof run>>): CheckpointBench {
  const sorted = [...withCk.durations].sort((a, b) => a - b);
  return {
    keys: KEYS,
    records: RECORDS,
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
  process.stdout.write(JSON.stringify(await runCheckpointBench()) + '\n');
}
