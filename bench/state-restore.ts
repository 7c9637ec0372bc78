/**
 * A large keyed state through kill -9: one worker process, one keyed ValueState per key over `--keys`
 * distinct keys (bench/jobs/big-state.ts), a checkpoint every `--interval-ms`. Once the state is whole
 * (two checkpoints in a row of the same size within 0.1%, in the job's second pass over its keys) the worker is
 * killed with SIGKILL; the cluster starts it again and the job restores. Reports the state's size, the
 * last checkpoint's duration, kill -> redeploy, kill -> first checkpoint after the restart, and checks
 * the job's one line of output: every key's state survived and no record counted twice.
 * Part of `npm run bench` (20 M keys, a checkpoint every 5 s; --quick: 3 M keys, every 500 ms); alone:
 * `node --import tsx bench/state-restore.ts [--keys 40000000] [--interval-ms 10000] [--stall-timeout-ms 30000]
 * [--task-heap-mb 512] [--state-backend-type disk]`
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { isTerminalJobState } from '../src/protocol/index.js';
import { buildJob } from '../src/sdk/index.js';

export interface StateRestoreResult {
  keys: number;
  stateBackendType: 'heap' | 'disk';
  stateBytes: number;
  checkpointMs: number;
  redeployMs: number;
  recoveredMs: number;
  exact: boolean;
  output: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`state-restore bench: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export async function measureStateRestore(
  keys: number,
  intervalMs: number,
  options: {
    /** The workers' --task-stall-timeout-ms (their default when undefined). */
    taskStallTimeoutMs?: number;
    /** The workers' --task-heap-mb (their default when undefined). */
    taskHeapMb?: number;
    /** The job's --state-backend-type. @default 'heap' */
    stateBackendType?: 'heap' | 'disk';
  } = {},
): Promise<StateRestoreResult> {
  const { taskStallTimeoutMs, taskHeapMb, stateBackendType = 'heap' } = options;
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'clink-bench-state-restore-'));
  const cluster = await EmbeddedCluster.start({
    workers: 1,
    slotsPerWorker: 1,
    ...(taskStallTimeoutMs !== undefined ? { taskStallTimeoutMs } : {}),
    ...(taskHeapMb !== undefined ? { taskHeapMb } : {}),
    localStateDir: join(dir, 'local-state'),
    log: createLogger({ level: 'error' }),
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(root, 'src/cli/bin.ts')] },
  });
  // Generous: the run's own pace, not a bound under test.
  const long = 60 * 60_000;
  try {
    const loaded = await loadJobModule(join(root, 'bench/jobs/big-state.ts'), { cacheDir: join(dir, 'cache') });
    const out = join(dir, 'out');
    const params = { keys: String(keys), out };
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
      checkpoint: { checkpointDir: join(dir, 'ckpt'), intervalMs, stateBackendType },
    });
    const c = cluster.coordinator;
    const whole = await until(
      'a checkpoint of the whole state',
      () => {
        const state = c.job(jobId)!.state;
        if (state !== 'RUNNING' && state !== 'DEPLOYING')
          throw new Error(
            `state-restore bench: the job is ${state} before its state was checkpointed whole; more --keys`,
          );
        const done = c.checkpointsOf(jobId) ?? [];
        const [a, b] = done.slice(-2);
        // Within 0.1%: the window at the end holds a sum that grows a byte now and then.
        return a && b && a.stateBytes > 0 && Math.abs(b.stateBytes - a.stateBytes) < a.stateBytes / 1000
          ? b
          : undefined;
      },
      long,
    );
    const killedAt = Date.now();
    process.kill(cluster.workerPids()[0]!, 'SIGKILL');
    const restart = await until('the restart', () => c.job(jobId)!.restarts[0], long);
    const recovered = await until(
      'a checkpoint after the restart',
      () => {
        const view = c.job(jobId)!;
        if (view.state === 'FAILED') throw new Error(`state-restore bench: the restored job FAILED: ${view.error}`);
        return c.checkpointsOf(jobId)!.find((k) => k.completedAtMs > restart.deployedAt);
      },
      long,
    );
    const end = await until(
      'the end of the job',
      () => (isTerminalJobState(c.job(jobId)!.state) ? c.job(jobId)! : undefined),
      long,
    );
    if (end.state !== 'FINISHED') throw new Error(`state-restore bench: the job ended ${end.state}: ${end.error}`);
    const files = (await readdir(out)).filter((f) => !f.startsWith('.'));
    const output = (await Promise.all(files.map((f) => readFile(join(out, f), 'utf8')))).join('').trim();
    const expected = JSON.stringify({ keys, sum: (keys * (keys - 1)) / 2 });
    return {
      keys,
      stateBackendType,
      stateBytes: whole.stateBytes,
      checkpointMs: whole.durationMs,
      redeployMs: restart.deployedAt - killedAt,
      recoveredMs: recovered.completedAtMs - killedAt,
      exact: output === expected,
      output,
    };
  } finally {
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      keys: { type: 'string' },
      'interval-ms': { type: 'string' },
      'stall-timeout-ms': { type: 'string' },
      'task-heap-mb': { type: 'string' },
      'state-backend-type': { type: 'string', default: 'heap' },
      quick: { type: 'boolean', default: false },
    },
  });
  const keys = values.keys ?? (values.quick ? '3000000' : '20000000');
  const interval = values['interval-ms'] ?? (values.quick ? '500' : '5000');
  const stall = values['stall-timeout-ms'];
  const heap = values['task-heap-mb'];
  const r = await measureStateRestore(Number(keys), Number(interval), {
    ...(stall !== undefined ? { taskStallTimeoutMs: Number(stall) } : {}),
    ...(heap !== undefined ? { taskHeapMb: Number(heap) } : {}),
    stateBackendType: values['state-backend-type'] === 'disk' ? 'disk' : 'heap',
  });
  process.stdout.write(JSON.stringify(r) + '\n');
  if (!r.exact) process.exitCode = 1;
}
