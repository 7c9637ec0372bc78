/**
 * Checkpoints under backpressure (issue 52's run): a datagen offering 40 000 rows/s into a stage taking
 * 5 ms a row, p=2 on two local worker processes (records cross processes through the rebalance), the
 * transactional file sink, a checkpoint every 2 s. Per mode (aligned, unaligned, each with and without
 * buffer debloating), over the run: checkpoints completed and failed, their duration p50 and max, the
 * most in-flight bytes one persisted, and the slow stage's throughput. Part of `npm run bench`; alone:
 * `node --import tsx bench/backpressure.ts [--quick] [--seconds N] [--mode <name>]`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { buildJob } from '../src/sdk/index.js';
import { median, rssMb } from './results.js';

const INTERVAL_MS = 2_000;
const PARAMS = { rate: '40000', slowUs: '5000' };

export const MODES = [
  { name: 'aligned', alignment: 'aligned', alignedTimeoutMs: 0, debloatTargetMs: 0 },
  { name: 'unaligned', alignment: 'unaligned', alignedTimeoutMs: 0, debloatTargetMs: 0 },
  { name: 'adaptive, aligned timeout 1 s', alignment: 'adaptive', alignedTimeoutMs: 1_000, debloatTargetMs: 0 },
  { name: 'aligned, debloat 1 s', alignment: 'aligned', alignedTimeoutMs: 0, debloatTargetMs: 1_000 },
  { name: 'unaligned, debloat 1 s', alignment: 'unaligned', alignedTimeoutMs: 0, debloatTargetMs: 1_000 },
] as const;

export interface BackpressureBench {
  mode: string;
  seconds: number;
  completed: number;
  /** Periodic checkpoints given up (timed out or failed) over the run. */
  failed: number;
  /** Aligned checkpoints taken again unaligned past their aligned timeout (adaptive, a worker of protocol 3). */
  switched: number;
  /** Completed checkpoints whose barriers overtook what was ahead of them (adaptive: converted in place). */
  unaligned: number;
  checkpointMsMedian: number;
  checkpointMsMax: number;
  /** The longest time without a completed checkpoint, from the run's start. */
  longestGapMs: number;
  inflightBytesMax: number;
  recordsPerSec: number;
  /** The workers' resident memory, summed, early in the run and at its end (MB): flat, or growing. */
  workerRssMbStart: number;
  workerRssMbEnd: number;
}

/** Resident memory of these processes (and their job threads), summed, in MB; Linux. */
const workersRssMb = (pids: readonly number[]): number => pids.reduce((mb, pid) => mb + rssMb(pid), 0);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function measure(mode: (typeof MODES)[number], seconds: number): Promise<BackpressureBench> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-backpressure-'));
  const cluster = await EmbeddedCluster.start({
    workers: 2,
    slotsPerWorker: 1,
    debloatTargetMs: mode.debloatTargetMs,
    log: createLogger({ level: 'error' }),
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(root, 'src/cli/bin.ts')] },
  });
  try {
    const loaded = await loadJobModule(join(root, 'bench/jobs/backpressure.ts'), { cacheDir: join(dir, 'cache') });
    const params = { ...PARAMS, out: join(dir, 'out') };
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
      params,
      buildParallelism: 2,
      checkpoint: {
        checkpointDir: join(dir, 'ckpt'),
        intervalMs: INTERVAL_MS,
        alignment: mode.alignment,
        alignedTimeoutMs: mode.alignedTimeoutMs,
      },
    });
    const c = cluster.coordinator;
    while (c.job(jobId)?.state !== 'RUNNING') await sleep(50);
    const startedAt = Date.now();
    const sinkAtStart = c.job(jobId)!.sinkRecords;
    const aborts = async (): Promise<{ failed: number; switched: number }> => {
      const values = (await cluster.metrics.checkpointsAborted.get()).values;
      const switched = values.find((v) => v.labels.reason === 'switched_to_unaligned')?.value ?? 0;
      return { failed: values.reduce((n, v) => n + v.value, 0) - switched, switched };
    };
    const abortedAtStart = await aborts();
    // Early in the run, once the queues have filled: what follows shows whether memory grows.
    await sleep(Math.min(5_000, (seconds * 1000) / 4));
    const workerRssMbStart = workersRssMb(cluster.workerPids());
    await sleep(seconds * 1000 - Math.min(5_000, (seconds * 1000) / 4));
    const endedAt = Date.now();
    const view = c.job(jobId)!;
    const done = (c.checkpointsOf(jobId) ?? []).filter(
      (k) => k.kind === 'periodic' && k.completedAtMs >= startedAt && k.completedAtMs <= endedAt,
    );
    const durations = done.map((k) => k.durationMs).sort((a, b) => a - b);
    let gap = 0;
    let last = startedAt;
    for (const k of done) {
      gap = Math.max(gap, k.completedAtMs - last);
      last = k.completedAtMs;
    }
    gap = Math.max(gap, endedAt - last);
    const aborted = await aborts();
    return {
      mode: mode.name,
      seconds,
      completed: done.length,
      failed: aborted.failed - abortedAtStart.failed,
      switched: aborted.switched - abortedAtStart.switched,
      unaligned: done.filter((k) => k.alignment === 'unaligned').length,
      checkpointMsMedian: median(durations),
      checkpointMsMax: durations.at(-1) ?? NaN,
      longestGapMs: gap,
      inflightBytesMax: Math.max(0, ...done.map((k) => k.inflightBytes)),
      recordsPerSec: ((view.sinkRecords - sinkAtStart) * 1000) / (endedAt - startedAt),
      workerRssMbStart,
      workerRssMbEnd: workersRssMb(cluster.workerPids()),
    };
  } finally {
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Each mode once, for `seconds` (60; quick: 10). */
export async function runBackpressureBench(
  options: { quick?: boolean; seconds?: number; mode?: string } = {},
): Promise<BackpressureBench[]> {
  const seconds = options.seconds ?? (options.quick ? 10 : 60);
  const out: BackpressureBench[] = [];
  for (const mode of MODES)
    if (!options.mode || mode.name.includes(options.mode)) out.push(await measure(mode, seconds));
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const seconds = arg('--seconds');
  const mode = arg('--mode');
  process.stdout.write(
    JSON.stringify(
      await runBackpressureBench({
        quick: process.argv.includes('--quick'),
        ...(seconds ? { seconds: Number(seconds) } : {}),
        ...(mode ? { mode } : {}),
      }),
    ) + '\n',
  );
}
