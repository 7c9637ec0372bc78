/**
 * Scale-out efficiency (issue 24): what a record costs once it leaves the process.
 *
 * - Nexmark q5 and q12 at parallelism 1 in one process (the local runtime, on a thread under a job
 *   thread's V8 limits, bench/local-thread.ts, so both sides allocate in the same heap), and on 1, 2 and 4 local
 *   worker processes at parallelism = workers: events/s (submit to completion) and CPU-s per million
 *   events of the whole cluster (every worker, plus this process, which hosts the coordinator). The
 *   configurations take turns, one run each per round after six warm-up rounds, and a cluster's CPU
 *   ratio is the median over rounds of its run against the local run of the same round: this machine's
 *   speed drifts by more than the differences measured, and a pair of runs seconds apart shares it.
 *   Each round also runs the same plan at parallelism N in one process (local p=N), so a cluster's
 *   ratio to it is what crossing processes costs apart from what running at parallelism N costs.
 * - The shuffle microbenchmark: the same bid records through one channel, source and sink on one
 *   worker (an in-process channel) and on two (a data connection): records/s and CPU-s per million.
 *
 *   node --import tsx bench/scale.ts [--quick]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  clusterRunner,
  runOn,
  startBenchCluster,
  type BenchClusterOptions,
  type ClusterRun,
  type DataPlaneResult,
} from './dataplane.js';
import { LocalThread } from './local-thread.js';
import { queryFile } from './nexmark.js';
import { median } from './results.js';
import type { EmbeddedCluster } from '../src/embedded/index.js';

export interface ScaleRow {
  query: string;
  /** 0: the local runtime in this process. */
  workers: number;
  parallelism: number;
  events: number;
  recordsPerSec: number;
  cpuSecondsPerMillion: number;
  /** Median over rounds of this configuration's CPU-s/M over the local p=1 run's in the same round (1 for local p=1). */
  cpuRatioToLocal: number;
  /** Each round's ratio, in order (the spread the median is taken from). */
  cpuRatiosToLocal: number[];
  /** For a cluster at p=N > 1: the same, over the local p=N run's (the same plan in one process). */
  cpuRatioToLocalSameParallelism?: number;
  runs: number;
}

export interface ShuffleRow {
  channel: 'in-process' | 'cross-process';
  records: number;
  recordsPerSec: number;
  cpuSecondsPerMillion: number;
  sockets: number;
  runs: number;
}

export interface ScaleBench {
  queries: ScaleRow[];
  shuffle: ShuffleRow[];
}

const root = fileURLToPath(new URL('..', import.meta.url));

async function onCluster(
  file: string,
  parallelism: number,
  params: Record<string, string>,
  records: number,
  runs: number,
  cluster: BenchClusterOptions,
): Promise<DataPlaneResult> {
  const c = await startBenchCluster(file, parallelism, cluster);
  try {
    return await runOn(c, file, parallelism, params, records, runs);
  } finally {
    await c.stop();
  }
}

/** One measured run's events/s and CPU-s per million events. */
type Measured = { recordsPerSec: number; cpuSecondsPerMillion: number };

/** `query` locally and on each cluster size, in turns: `warmups` rounds, then `rounds` measured rounds of one run each. */
async function alternated(
  query: string,
  sizes: number[],
  events: number,
  warmups: number,
  rounds: number,
): Promise<ScaleRow[]> {
  const file = queryFile(query);
  const clusters: EmbeddedCluster[] = [];
  const inProcess = LocalThread.start(file);
  try {
    const runners: { workers: number; run: () => Promise<ClusterRun> }[] = [];
    for (const workers of sizes) {
      const c = await startBenchCluster(file, workers, { workers });
      clusters.push(c);
      runners.push({
        workers,
        run: (await clusterRunner(c, file, workers, { events: String(events), sink: 'blackhole' }, events)).run,
      });
    }
    // The same plan in one process at each cluster's parallelism above 1.
    const wider = sizes.filter((n) => n > 1);
    // Warm-up rounds until steady: a cluster's job threads keep tiering up (and growing their young
    // generation) for five or six runs, 10% above their steady CPU in the fourth and fifth; the local
    // thread, which runs once per parallelism each round, is steady by the third round. Fewer warm-ups
    // measure a cluster's warm-up against a warm reference (docs/performance-history.md).
    for (let round = 0; round < warmups; round++) {
      await inProcess.run(events);
      for (const n of wider) await inProcess.run(events, n);
      for (const r of runners) await r.run();
    }
    const local: Measured[] = [];
    const localWide = wider.map(() => [] as (Measured & { ratio: number })[]);
    // Per cluster size, each round's run, its CPU over that round's local p=1 run and over its local p=N run.
    const paired = runners.map(() => [] as (Measured & { ratio: number; ratioSame?: number })[]);
    for (let round = 0; round < rounds; round++) {
      const l = await inProcess.run(events);
      local.push(l);
      const sameRound = new Map<number, number>();
      for (const [i, n] of wider.entries()) {
        const w = await inProcess.run(events, n);
        localWide[i]!.push({ ...w, ratio: w.cpuSecondsPerMillion / l.cpuSecondsPerMillion });
        sameRound.set(n, w.cpuSecondsPerMillion);
      }
      for (const [i, r] of runners.entries()) {
        const m = await r.run();
        const cpu = m.cpuSecondsPerMillion + m.coordinatorCpuSecondsPerMillion;
        const same = sameRound.get(r.workers);
        paired[i]!.push({
          recordsPerSec: m.recordsPerSec,
          cpuSecondsPerMillion: cpu,
          ratio: cpu / l.cpuSecondsPerMillion,
          ...(same ? { ratioSame: cpu / same } : {}),
        });
      }
    }
    const row = (
      workers: number,
      parallelism: number,
      ms: (Measured & { ratio?: number; ratioSame?: number })[],
    ): ScaleRow => ({
      query,
      workers,
      parallelism,
      events,
      recordsPerSec: median(ms.map((m) => m.recordsPerSec)),
      cpuSecondsPerMillion: median(ms.map((m) => m.cpuSecondsPerMillion)),
      cpuRatioToLocal: median(ms.map((m) => m.ratio ?? 1)),
      cpuRatiosToLocal: ms.map((m) => m.ratio ?? 1),
      ...(ms[0]?.ratioSame !== undefined
        ? { cpuRatioToLocalSameParallelism: median(ms.map((m) => m.ratioSame!)) }
        : {}),
      runs: rounds,
    });
    return [
      row(0, 1, local),
      ...wider.map((n, i) => row(0, n, localWide[i]!)),
      ...runners.map((r, i) => row(r.workers, r.workers, paired[i]!)),
    ];
  } finally {
    await inProcess.close();
    for (const c of clusters) await c.stop();
  }
}

export async function runScaleBench(options: { quick?: boolean } = {}): Promise<ScaleBench> {
  const events = options.quick ? 1_000_000 : 4_000_000;
  const runs = options.quick ? 1 : 3;
  const rounds = options.quick ? 3 : 7;
  const warmups = options.quick ? 1 : 6;
  const queries: ScaleRow[] = [];
  for (const query of ['q5', 'q12'])
    queries.push(...(await alternated(query, options.quick ? [1, 2] : [1, 2, 4], events, warmups, rounds)));
  const records = options.quick ? 2_000_000 : 8_000_000;
  const shuffle: ShuffleRow[] = [];
  const file = join(root, 'bench/jobs/shuffle.ts');
  for (const apart of [false, true]) {
    // One slot on each of two workers: a shared slot puts source and sink on one, a group of its own on the other.
    const r = await onCluster(file, 1, { count: String(records), apart: String(apart) }, records, runs, {
      workers: 2,
      slotsPerWorker: 1,
    });
    const expected = apart ? 1 : 0;
    if (r.edges.socket !== expected)
      throw new Error(`shuffle apart=${apart}: ${r.edges.socket} socket channels, expected ${expected}`);
    shuffle.push({
      channel: apart ? 'cross-process' : 'in-process',
      records,
      recordsPerSec: r.recordsPerSec,
      cpuSecondsPerMillion: r.cpuSecondsPerMillion,
      sockets: r.edges.socket,
      runs,
    });
  }
  return { queries, shuffle };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runScaleBench({ quick: process.argv.includes('--quick') })) + '\n');
}
