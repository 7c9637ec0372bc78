/**
 * Recovery time: a keyed unbounded job checkpointing every 500 ms on an embedded cluster of 3 local
 * worker processes; one worker that runs its subtasks is killed with SIGKILL. Measures from the kill
 * to the loss verdict, to the redeploy, and to the first checkpoint completed after the restart (the
 * job is whole and durable again), at 24 subtasks and at 48. Default heartbeat timeout (2 s).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { buildJob } from '../src/sdk/index.js';

export interface RecoveryResult {
  subtasks: number;
  workers: number;
  /** kill -9 -> the job is RESTARTING (the loss verdict). */
  detectMs: number;
  /** kill -9 -> the next attempt is deployed. */
  redeployMs: number;
  /** kill -9 -> the first checkpoint completed after the restart. */
  recoveredMs: number;
  restoredFrom: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`recovery bench: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(5);
  }
}

async function measure(parallelism: number): Promise<RecoveryResult> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-recovery-'));
  const subtasks = 2 * parallelism;
  const cluster = await EmbeddedCluster.start({
    workers: 3,
    // Two survivors must hold the whole job again.
    slotsPerWorker: subtasks / 2,
    log: createLogger({ level: 'error' }),
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(root, 'src/cli/bin.ts')] },
  });
  try {
    const loaded = await loadJobModule(join(root, 'test/fixtures/jobs/unbounded.ts'), { cacheDir: join(dir, 'cache') });
    const params = { rate: '2000' };
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism, params }).spec,
      params,
      buildParallelism: parallelism,
      checkpoint: { checkpointDir: join(dir, 'ckpt'), intervalMs: 500 },
    });
    const c = cluster.coordinator;
    await until('a first checkpoint', () => (c.checkpointsOf(jobId)?.length ? true : undefined));
    const victim = c.job(jobId)!.subtasks[0]!.workerId;
    const pid = cluster.workerPids()[Number(victim.replace('local-', ''))]!;
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    const restart = await until('the restart', () => c.job(jobId)!.restarts[0]);
    const recovered = await until('a checkpoint after the restart', () =>
      c.checkpointsOf(jobId)!.find((k) => k.completedAtMs > restart.deployedAt),
    );
    return {
      subtasks,
      workers: 3,
      detectMs: restart.at - killedAt,
      redeployMs: restart.deployedAt - killedAt,
      recoveredMs: recovered.completedAtMs - killedAt,
      restoredFrom: restart.restoredFrom,
    };
  } finally {
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The run of median recovery time, and the range over all runs. */
export type RecoveryBench = RecoveryResult & { runs: number; recoveredMsRange: [number, number] };

/** At 24 subtasks and (unless `quick`) at 48, 3 runs each (quick: 1). */
export async function runRecoveryBench(options: { quick?: boolean } = {}): Promise<RecoveryBench[]> {
  const out: RecoveryBench[] = [];
  const runs = options.quick ? 1 : 3;
  for (const p of options.quick ? [12] : [12, 24]) {
    const all: RecoveryResult[] = [];
    for (let i = 0; i < runs; i++) all.push(await measure(p));
    all.sort((a, b) => a.recoveredMs - b.recoveredMs);
    out.push({
      ...all[Math.floor((runs - 1) / 2)]!,
      runs,
      recoveredMsRange: [all[0]!.recoveredMs, all.at(-1)!.recoveredMs],
    });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runRecoveryBench({ quick: process.argv.includes('--quick') })) + '\n');
}
