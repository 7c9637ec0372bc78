// The windowed file-sink job (fixtures/jobs/ckpt-file-sink.ts) that the recovery tests run on a cluster:
// its uninterrupted output is computed in-process first, so a test compares what the cluster committed.
import { join, resolve } from 'node:path';
import type { CheckpointSettings, ClusterClient } from '../../src/client/index.js';
import { runJob } from '../../src/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { PATIENCE_MS, visibleLines } from '../helpers.js';
import { ClusterHarness, type HarnessOptions } from './cluster.js';
import type { JobView } from '../../src/coordinator/index.js';
import { setTimeout as sleep } from 'node:timers/promises';

export const SINK_JOB = resolve(import.meta.dirname, '../fixtures/jobs/ckpt-file-sink.ts');

export interface SubmittedSinkJob {
  jobId: string;
  client: ClusterClient;
  /** Where the cluster writes. */
  out: string;
  /** What an uninterrupted run writes (lines, sorted). */
  expected: string[];
}

/** Submit the file-sink job at parallelism 2, checkpointing into `<dir>/ckpt` every `intervalMs` (`checkpoint`: other settings). */
export async function submitSinkJob(
  h: ClusterHarness,
  o: {
    intervalMs?: number;
    rate?: number;
    maxRestartsOnWorkerLoss?: number;
    params?: Record<string, string>;
    checkpoint?: Partial<CheckpointSettings>;
  } = {},
): Promise<SubmittedSinkJob> {
  const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(h.dir, 'c') });
  const expectedDir = join(h.dir, 'expected');
  await runJob(loaded.job, { parallelism: 2, params: { ...o.params, out: expectedDir } });
  const out = join(h.dir, 'out');
  const client = await h.client();
  const params = { ...o.params, out, rate: String(o.rate ?? 3000) };
  const { jobId } = await client.submit({
    module: loaded,
    spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
    params,
    buildParallelism: 2,
    checkpoint: {
      checkpointDir: join(h.dir, 'ckpt'),
      intervalMs: o.intervalMs ?? 500,
      maxRestartsOnWorkerLoss: o.maxRestartsOnWorkerLoss ?? -1,
      ...o.checkpoint,
    },
  });
  return { jobId, client, out, expected: await visibleLines(expectedDir) };
}

export interface HaRun {
  h: ClusterHarness;
  jobId: string;
  out: string;
  expected: string[];
  /** The job as the leader now serves it. */
  view(): Promise<JobView>;
  /** Wait until the job, as the leader serves it, has ended; returns it. */
  ended(timeoutMs?: number): Promise<JobView>;
}

/** An HA cluster running the windowed file-sink job at parallelism 2, checkpointing every `intervalMs`. */
export async function haJob(
  options: HarnessOptions,
  o: { intervalMs?: number; waitForCheckpoint?: boolean; rate?: number } = {},
): Promise<HaRun> {
  const h = await ClusterHarness.start(options);
  try {
    const { jobId, client, out, expected } = await submitSinkJob(h, {
      ...(o.intervalMs ? { intervalMs: o.intervalMs } : {}),
      ...(o.rate ? { rate: o.rate } : {}),
    });
    client.close();
    const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    if (o.waitForCheckpoint !== false) {
      for (let i = 0; i < 400; i++) {
        if ((await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).body.checkpoints.length > 0)
          break;
        await sleep(25);
      }
    }
    const ended = async (timeoutMs = PATIENCE_MS): Promise<JobView> =>
      h.waitForJob<JobView>(jobId, ['FINISHED', 'FAILED', 'CANCELED'], timeoutMs);
    return { h, jobId, out, expected, view, ended };
  } catch (err) {
    await h.close();
    throw err;
  }
}
