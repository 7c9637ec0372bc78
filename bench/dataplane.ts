/**
 * Data-plane benchmark: jobs on an embedded cluster of 2 local worker processes over loopback, at
 * parallelism 1, 2 and 4. Reports records/s (submit to completion) and worker CPU seconds per million
 * records (read from /proc, all worker processes together). With `--profile`, the workers write CPU
 * profiles and the serialisation share of the shuffle query's CPU is reported.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { median, peakRssMb, processCpuSeconds } from './results.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { buildJob } from '../src/sdk/index.js';
import { createPhysicalPlan } from '../src/plan/index.js';

export interface DataPlaneResult {
  job: string;
  parallelism: number;
  records: number;
  recordsPerSec: number;
  cpuSecondsPerMillion: number;
  /** This process's CPU per million records: the embedded coordinator's (and the client's, which waits). */
  coordinatorCpuSecondsPerMillion: number;
  edges: { local: number; socket: number };
  /** Peak resident memory of each worker process (MB). */
  peakRssMb: number[];
  runs: number;
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** One measured run of a job on a cluster: events/s (submit to completion), CPU per million records. */
export interface ClusterRun {
  recordsPerSec: number;
  /** Every worker process's CPU. */
  cpuSecondsPerMillion: number;
  /** This process's: the embedded coordinator's (and the client's, which waits). */
  coordinatorCpuSecondsPerMillion: number;
  edges: { local: number; socket: number };
}

/** A job module ready to run on a running cluster, once per call of the function returned. */
export async function clusterRunner(
  cluster: EmbeddedCluster,
  jobFile: string,
  parallelism: number,
  params: Record<string, string>,
  records: number,
): Promise<{ job: string; run: () => Promise<ClusterRun> }> {
  const loaded = await loadJobModule(jobFile);
  const built = buildJob(loaded.job, { parallelism, params });
  const client = await cluster.client();
  const pids = cluster.workerPids();
  const run = async (): Promise<ClusterRun> => {
    const cpu0 = pids.reduce((n, p) => n + processCpuSeconds(p), 0);
    const own0 = process.cpuUsage();
    const t0 = performance.now();
    const { jobId } = await client.submit({ module: loaded, spec: built.spec, params, buildParallelism: parallelism });
    const outcome = await client.waitForCompletion(jobId);
    if (!outcome.ok) throw new Error(outcome.error);
    const wall = (performance.now() - t0) / 1000;
    const own = process.cpuUsage(own0);
    return {
      recordsPerSec: records / wall,
      cpuSecondsPerMillion: (pids.reduce((n, p) => n + processCpuSeconds(p), 0) - cpu0) / (records / 1e6),
      coordinatorCpuSecondsPerMillion: (own.user + own.system) / 1e6 / (records / 1e6),
      edges: cluster.coordinator.job(jobId)!.edges,
    };
  };
  return { job: built.spec.job.name, run };
}

/**
 * Run a job module `runs` times (after one warm-up) on a running cluster: records / wall time, median;
 * the workers' CPU per million records, median; their peak memory.
 */
export async function runOn(
  cluster: EmbeddedCluster,
  jobFile: string,
  parallelism: number,
  params: Record<string, string>,
  records: number,
  runs = 3,
): Promise<DataPlaneResult> {
  const { job, run } = await clusterRunner(cluster, jobFile, parallelism, params, records);
  await run(); // warm-up
  const measured: ClusterRun[] = [];
  for (let i = 0; i < runs; i++) measured.push(await run());
  return {
    job,
    parallelism,
    records,
    recordsPerSec: median(measured.map((m) => m.recordsPerSec)),
    cpuSecondsPerMillion: median(measured.map((m) => m.cpuSecondsPerMillion)),
    coordinatorCpuSecondsPerMillion: median(measured.map((m) => m.coordinatorCpuSecondsPerMillion)),
    edges: measured.at(-1)!.edges,
    peakRssMb: cluster.workerPids().map(peakRssMb),
    runs,
  };
}

/** CLINK_BENCH_DEBLOAT_TARGET_MS: buffer debloating's target for a side-by-side run (0, off, by default). */
export const benchDebloatTargetMs = (): number => Number(process.env.CLINK_BENCH_DEBLOAT_TARGET_MS ?? 0);

export interface BenchClusterOptions {
  profileDir?: string;
  lingerMs?: number;
  tls?: { ca: string; cert: string; key: string };
  /** Worker processes. @default 2 */
  workers?: number;
  /** Slots on each; by default enough for an equal share of the job (at least one whole instance). */
  slotsPerWorker?: number;
}

/** An embedded cluster of worker processes (2 by default) with slots for an equal share of `jobFile`'s subtasks at `parallelism` each. */
export async function startBenchCluster(
  jobFile: string,
  parallelism: number,
  options: BenchClusterOptions = {},
): Promise<EmbeddedCluster> {
  const workers = options.workers ?? 2;
  // Slots for a share of the job on each worker (at least one whole instance), so p >= workers spans all.
  const loaded = await loadJobModule(jobFile);
  const subtasks = createPhysicalPlan(buildJob(loaded.job, { parallelism, params: { count: '1', events: '1' } }).spec)
    .subtasks.length;
  return EmbeddedCluster.start({
    workers,
    slotsPerWorker:
      options.slotsPerWorker ?? Math.max(Math.ceil(subtasks / parallelism), Math.ceil(subtasks / workers)),
    log: createLogger({ level: 'error' }),
    batchLingerMs: options.lingerMs ?? 0,
    ...(options.tls ? { tls: options.tls } : {}),
    // Side by side: CLINK_BENCH_TASK_ISOLATION=none measures the workers without job threads.
    ...(process.env.CLINK_BENCH_TASK_ISOLATION === 'none' ? { taskIsolation: 'none' as const } : {}),
    // Side by side: CLINK_BENCH_DATA_TRANSPORT=channel measures a connection per channel instead of data links.
    ...(process.env.CLINK_BENCH_DATA_TRANSPORT === 'channel' ? { dataTransport: 'channel' as const } : {}),
    // Side by side: CLINK_BENCH_DEBLOAT_TARGET_MS=1000 measures the workers with buffer debloating on.
    debloatTargetMs: benchDebloatTargetMs(),
    cliCommand: {
      execPath: process.execPath,
      args: [
        ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : []),
        '--import',
        'tsx',
        join(root, 'src/cli/bin.ts'),
      ],
    },
  });
}

export async function runDataPlaneBench(
  options: { profileDir?: string; lingerMs?: number } = {},
): Promise<DataPlaneResult[]> {
  const jobs: [string, number][] = options.profileDir
    ? [['keyed-count.ts', 3_000_000]]
    : [
        ['q0.ts', 20_000_000],
        ['keyed-count.ts', 3_000_000],
      ];
  const results: DataPlaneResult[] = [];
  for (const [file, records] of jobs) {
    for (const p of options.profileDir ? [2] : [1, 2, 4]) {
      const jobFile = join(root, 'bench/jobs', file);
      const cluster = await startBenchCluster(jobFile, p, options);
      try {
        results.push(await runOn(cluster, jobFile, p, { count: String(records) }, records));
      } finally {
        await cluster.stop();
      }
    }
  }
  return results;
}

/** Share of profiled CPU spent encoding and decoding records (msgpackr, the batch codec, framing). */
export function serialisationShare(profileDir: string): { share: number; totalMs: number } {
  let total = 0;
  let serde = 0;
  for (const f of readdirSync(profileDir).filter((x) => x.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(profileDir, f), 'utf8')) as {
      nodes: { id: number; callFrame: { functionName: string; url: string } }[];
      samples: number[];
      timeDeltas: number[];
    };
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    p.samples.forEach((id, i) => {
      const n = byId.get(id)!;
      const dt = p.timeDeltas[i] ?? 0;
      const { functionName: fn, url } = n.callFrame;
      if (fn === '(idle)' || fn === '(program)') return;
      // Startup (loading and compiling modules) is not the job's work.
      if (/tsx|esbuild|node:internal\/modules|node:internal\/main|compileSourceTextModule/.test(url + fn)) return;
      total += dt;
      if (
        /msgpackr/.test(url) ||
        /protocol\/(batch|codec|schema|wire)\.ts/.test(url) ||
        /dataplane\/frames\.ts/.test(url)
      )
        serde += dt;
    });
  }
  return { share: total === 0 ? 0 : serde / total, totalMs: total / 1000 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--profile')) {
    const dir = mkdtempSync(join(tmpdir(), 'clink-prof-'));
    await runDataPlaneBench({ profileDir: dir });
    process.stdout.write(JSON.stringify({ serialisation: serialisationShare(dir) }) + '\n');
    rmSync(dir, { recursive: true, force: true });
  } else {
    const linger = process.argv.find((a) => a.startsWith('--linger='));
    process.stdout.write(
      JSON.stringify(await runDataPlaneBench(linger ? { lingerMs: Number(linger.slice(9)) } : {})) + '\n',
    );
  }
}
