/**
 * Scale-out efficiency (issue 24): what a record costs once it leaves the process.
 *
 * - Nexmark q5 and q12 at parallelism 1 in one process (the local runtime), then on 1, 2 and 4 local
 *   worker processes at parallelism = workers: events/s (submit to completion) and CPU-s per million
 *   events of the whole cluster (every worker, plus this process, which hosts the coordinator).
 * - The shuffle microbenchmark: the same bid records through one channel, source and sink on one
 *   worker (an in-process channel) and on two (a data connection): records/s and CPU-s per million.
 *
 *   node --import tsx bench/scale.ts [--quick]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOn, startBenchCluster, type BenchClusterOptions, type DataPlaneResult } from './dataplane.js';
import { queryFile, runLocal } from './nexmark.js';

export interface ScaleRow {
  query: string;
  /** 0: the local runtime in this process. */
  workers: number;
  parallelism: number;
  events: number;
  recordsPerSec: number;
  cpuSecondsPerMillion: number;
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

async function onCluster(file: string, parallelism: number, params: Record<string, string>, records: number, runs: number, cluster: BenchClusterOptions): Promise<DataPlaneResult> {
  const c = await startBenchCluster(file, parallelism, cluster);
  try {
    return await runOn(c, file, parallelism, params, records, runs);
  } finally {
    await c.stop();
  }
}

export async function runScaleBench(options: { quick?: boolean } = {}): Promise<ScaleBench> {
  const events = options.quick ? 1_000_000 : 4_000_000;
  const runs = options.quick ? 1 : 3;
  const queries: ScaleRow[] = [];
  for (const query of ['q5', 'q12']) {
    const local = await runLocal(query, events, runs);
    queries.push({ query, workers: 0, parallelism: 1, events, recordsPerSec: local.recordsPerSec!, cpuSecondsPerMillion: local.cpuSecondsPerMillion!, runs });
    for (const workers of options.quick ? [1, 2] : [1, 2, 4]) {
      const r = await onCluster(queryFile(query), workers, { events: String(events), sink: 'blackhole' }, events, runs, { workers });
      queries.push({ query, workers, parallelism: workers, events, recordsPerSec: r.recordsPerSec, cpuSecondsPerMillion: r.cpuSecondsPerMillion + r.coordinatorCpuSecondsPerMillion, runs });
    }
  }
  const records = options.quick ? 2_000_000 : 8_000_000;
  const shuffle: ShuffleRow[] = [];
  const file = join(root, 'bench/jobs/shuffle.ts');
  for (const apart of [false, true]) {
    // One slot on each of two workers: a shared slot puts source and sink on one, a group of its own on the other.
    const r = await onCluster(file, 1, { count: String(records), apart: String(apart) }, records, runs, { workers: 2, slotsPerWorker: 1 });
    const expected = apart ? 1 : 0;
    if (r.edges.socket !== expected) throw new Error(`shuffle apart=${apart}: ${r.edges.socket} socket channels, expected ${expected}`);
    shuffle.push({ channel: apart ? 'cross-process' : 'in-process', records, recordsPerSec: r.recordsPerSec, cpuSecondsPerMillion: r.cpuSecondsPerMillion, sockets: r.edges.socket, runs });
  }
  return { queries, shuffle };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runScaleBench({ quick: process.argv.includes('--quick') })) + '\n');
}
