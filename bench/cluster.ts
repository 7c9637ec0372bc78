/**
 * Cluster latency: a trivial job on an embedded cluster of 3 local worker processes. Measures
 * submit -> RUNNING (every subtask deployed, ports reported, peers sent) and submit -> JobCompleted
 * (for a trivial job, almost all of it is overhead). The first run is cold (the workers import the job
 * module); later runs reuse the loaded module.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { buildJob } from '../src/sdk/index.js';

export interface LatencyResult {
  name: string;
  coldMs: { running: number; completed: number };
  medianMs: { running: number; completed: number };
  p90Ms: { running: number; completed: number };
  runs: number;
}

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

export async function runClusterBench(runs = 30): Promise<LatencyResult> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const log = createLogger({ level: 'error' });
  const cluster = await EmbeddedCluster.start({
    workers: 3,
    slotsPerWorker: 2,
    log,
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(root, 'src/cli/bin.ts')] },
  });
  try {
    const loaded = await loadJobModule(join(root, 'test/fixtures/jobs/trivial.ts'));
    const built = buildJob(loaded.job, { parallelism: 3 });
    const client = await cluster.client();
    const running: number[] = [];
    const completed: number[] = [];
    for (let i = 0; i <= runs; i++) {
      const t0 = Date.now();
      const { jobId } = await client.submit({ module: loaded, spec: built.spec, params: {}, buildParallelism: 3 });
      const outcome = await client.waitForCompletion(jobId);
      const done = Date.now();
      if (!outcome.ok) throw new Error(outcome.error);
      running.push(cluster.coordinator.job(jobId)!.runningAt! - t0);
      completed.push(done - t0);
    }
    const [coldRunning, ...warmRunning] = running;
    const [coldCompleted, ...warmCompleted] = completed;
    return {
      name: 'trivial job, 4 subtasks on 3 local workers',
      coldMs: { running: coldRunning!, completed: coldCompleted! },
      medianMs: { running: pct(warmRunning, 0.5), completed: pct(warmCompleted, 0.5) },
      p90Ms: { running: pct(warmRunning, 0.9), completed: pct(warmCompleted, 0.9) },
      runs,
    };
  } finally {
    await cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--run') {
  process.stdout.write(JSON.stringify(await runClusterBench(process.argv.includes('--quick') ? 10 : 30)) + '\n');
}
