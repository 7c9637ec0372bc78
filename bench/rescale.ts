/**
 * Rescale pause: an unbounded keyed job (bench/jobs/rescale-probe.ts: source -> keyed map -> sink, three
 * tasks, 24 subtasks at parallelism 8) on an embedded cluster of 3 local worker processes, checkpointing
 * every 500 ms. Its keyed map goes 8 -> 4 -> 8, by drain and replan and then in place (hot cutover: the
 * sources and sinks run on), so both modes make the same change side by side. The pause is measured
 * where the records land: the longest gap between two batches reaching the sinks (last record before ->
 * first record after) while the rescale runs. Also reported: the coordinator's own count (drain and
 * replan: the job stopping to it running again; hot: the cutover checkpoint's trigger to the release).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { buildJob } from '../src/sdk/index.js';

export interface RescaleResult {
  mode: 'drain-and-replan' | 'hot-cutover';
  from: number;
  to: number;
  /** Subtasks after the rescale. */
  subtasks: number;
  /** The longest gap between batches reaching the sinks while the rescale ran (ms). */
  pauseMs: number;
  /** From the request to the answer (ms): the checkpoint, the drain, the redeploy. */
  requestMs: number;
  /** The coordinator's count: the job stopping to it running again. */
  stoppedMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Every batch arrival the sinks logged, sorted. */
async function arrivals(dir: string): Promise<number[]> {
  const out: number[] = [];
  for (const f of await readdir(dir))
    if (f.startsWith('arrivals-'))
      for (const l of (await readFile(join(dir, f), 'utf8')).split('\n')) if (l) out.push(Number(l));
  return out.sort((a, b) => a - b);
}

/** The longest gap between consecutive arrivals inside [from, to]. */
function longestGap(times: number[], from: number, to: number): number {
  let gap = 0;
  for (let i = 1; i < times.length; i++)
    if (times[i]! >= from && times[i - 1]! <= to) gap = Math.max(gap, times[i]! - times[i - 1]!);
  return gap;
}

async function measure(quick: boolean): Promise<RescaleResult[]> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-rescale-'));
  const cluster = await EmbeddedCluster.start({
    workers: 3,
    slotsPerWorker: 8,
    log: createLogger({ level: process.env.BENCH_LOG ?? 'error' }),
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(root, 'src/cli/bin.ts')] },
  });
  try {
    const loaded = await loadJobModule(join(root, 'bench/jobs/rescale-probe.ts'), { cacheDir: join(dir, 'cache') });
    const params = { rate: '4000', dir };
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 8, params }).spec,
      params,
      buildParallelism: 8,
      checkpoint: { checkpointDir: join(dir, 'ckpt'), intervalMs: 500 },
    });
    const c = cluster.coordinator;
    const out: RescaleResult[] = [];
    // Source 8, keyed map 8 -> 4 -> 8, sink 8: 24 -> 20 -> 24 subtasks, by each mode in turn.
    const step = (mode: 'replan' | 'hot', from: number, to: number) => ({ mode, from, to });
    const steps = quick
      ? [step('replan', 8, 4), step('hot', 4, 8)]
      : [step('replan', 8, 4), step('replan', 4, 8), step('hot', 8, 4), step('hot', 4, 8)];
    for (const { mode, from, to } of steps) {
      while (!c.checkpointsOf(jobId)?.length) await sleep(20);
      await sleep(1_000);
      const asked = Date.now();
      const r = await client.rescale(jobId, 0, { ids: to }, undefined, mode);
      const answered = Date.now();
      if (!r.ok) throw new Error(`rescale bench: ${r.message}`);
      await sleep(1_000);
      const rescale = c.job(jobId)!.rescales.at(-1)!;
      out.push({
        mode: rescale.mode,
        from: 16 + from,
        to: 16 + to,
        subtasks: 16 + to,
        pauseMs: longestGap(await arrivals(dir), asked, answered + 1_000),
        requestMs: answered - asked,
        stoppedMs: rescale.runningAt! - rescale.at,
      });
    }
    await client.cancel(jobId);
    client.close();
    return out;
  } finally {
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export type RescaleBench = RescaleResult;

export async function runRescaleBench(options: { quick?: boolean } = {}): Promise<RescaleBench[]> {
  return measure(options.quick === true);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runRescaleBench({ quick: process.argv.includes('--quick') })) + '\n');
}
