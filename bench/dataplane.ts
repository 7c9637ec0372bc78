/**
 * Data-plane benchmark: jobs on an embedded cluster of 2 local worker processes over loopback, at
 * parallelism 1, 2 and 4. Reports records/s (submit to completion) and worker CPU seconds per million
 * records (read from /proc, all worker processes together). With `--profile`, the workers write CPU
 * profiles and the serialisation share of the shuffle query's CPU is reported.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
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
  edges: { local: number; socket: number };
}

const root = fileURLToPath(new URL('..', import.meta.url));
const CLK_TCK = 100;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

async function runOn(cluster: EmbeddedCluster, file: string, parallelism: number, records: number): Promise<DataPlaneResult> {
  const loaded = await loadJobModule(join(root, 'bench/jobs', file));
  const params = { count: String(records) };
  const built = buildJob(loaded.job, { parallelism, params });
  const client = await cluster.client();
  const pids = cluster.workerPids();
  const samples: number[] = [];
  let cpu = 0;
  let edges = { local: 0, socket: 0 };
  for (let run = 0; run < 4; run++) {
    const cpu0 = pids.reduce((n, p) => n + cpuSeconds(p), 0);
    const t0 = performance.now();
    const { jobId } = await client.submit({ module: loaded, spec: built.spec, params, buildParallelism: parallelism });
    const outcome = await client.waitForCompletion(jobId);
    if (!outcome.ok) throw new Error(outcome.error);
    const wall = (performance.now() - t0) / 1000;
    edges = cluster.coordinator.job(jobId)!.edges;
    if (run === 0) continue; // warm-up
    samples.push(records / wall);
    cpu += pids.reduce((n, p) => n + cpuSeconds(p), 0) - cpu0;
  }
  samples.sort((a, b) => a - b);
  return {
    job: built.spec.job.name,
    parallelism,
    records,
    recordsPerSec: samples[Math.floor(samples.length / 2)]!,
    cpuSecondsPerMillion: cpu / 3 / (records / 1e6),
    edges,
  };
}

export async function runDataPlaneBench(options: { profileDir?: string; lingerMs?: number } = {}): Promise<DataPlaneResult[]> {
  const jobs: [string, number][] = options.profileDir ? [['keyed-count.ts', 3_000_000]] : [['q0.ts', 20_000_000], ['keyed-count.ts', 3_000_000]];
  const results: DataPlaneResult[] = [];
  for (const [file, records] of jobs) {
    for (const p of options.profileDir ? [2] : [1, 2, 4]) {
      // Slots for half the job on each worker (at least one whole instance), so p >= 2 spans both.
      const loaded = await loadJobModule(join(root, 'bench/jobs', file));
      const subtasks = createPhysicalPlan(buildJob(loaded.job, { parallelism: p, params: { count: '1' } }).spec).subtasks.length;
      const cluster = await EmbeddedCluster.start({
        workers: 2,
        slotsPerWorker: Math.max(Math.ceil(subtasks / p), Math.ceil(subtasks / 2)),
        log: createLogger({ level: 'error' }),
        batchLingerMs: options.lingerMs ?? 0,
        cliCommand: {
          execPath: process.execPath,
          args: [...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : []), '--import', 'tsx', join(root, 'src/cli/bin.ts')],
        },
      });
      try {
        results.push(await runOn(cluster, file, p, records));
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
      if (/msgpackr/.test(url) || /protocol\/(batch|codec|schema|wire)\.ts/.test(url) || /dataplane\/frames\.ts/.test(url)) serde += dt;
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
    process.stdout.write(JSON.stringify(await runDataPlaneBench(linger ? { lingerMs: Number(linger.slice(9)) } : {})) + '\n');
  }
}
