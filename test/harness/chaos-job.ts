// A checkpointed job on a real cluster for chaos tests against external systems: submit it, follow its
// checkpoints, and a seeded PRNG for when to strike (a failure names its seed; CLINK_CHAOS_SEEDS replays it).
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckpointSettings, ClusterClient } from '../../src/client/index.js';
import type { CompletedMarker, JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { PATIENCE_MS, waitFor } from '../helpers.js';
import { ClusterHarness } from './cluster.js';

/** The seed of this run: CLINK_CHAOS_SEEDS's first, else one from the clock (printed by the test). */
export function chaosSeed(): number {
  return Number((process.env.CLINK_CHAOS_SEEDS ?? String(Date.now() % 1000)).split(',')[0]);
}

/** mulberry32: a small seeded PRNG, so a seed replays the same schedule. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Pipe {
  h: ClusterHarness;
  client: ClusterClient;
  jobId: string;
  view(): Promise<JobView>;
  /** Wait until the job runs and has completed a checkpoint after `after`; returns its id, or undefined once the job has finished. */
  checkpointAfter(after: number): Promise<number | undefined>;
  /** Wait until the job has completed `n` checkpoints while running (fails if it finishes first). */
  checkpoints(n: number): Promise<void>;
}

/**
 * Start a cluster of three 2-slot workers and submit `jobFile` at parallelism 2 (or `o.parallelism`),
 * checkpointing every 300 ms (`o.checkpoint`: other settings).
 */
export async function startPipe(
  jobFile: string,
  params: Record<string, string>,
  o: { parallelism?: number; checkpoint?: Partial<CheckpointSettings> } = {},
): Promise<Pipe> {
  // A worker that a busy machine delayed past its heartbeat timeout re-registers: the submit waits for it.
  const h = await ClusterHarness.start({
    workers: 3,
    slots: 2,
    coordinatorArgs: ['--restart-backoff-initial-ms=200', `--submit-wait-for-slots-ms=${PATIENCE_MS}`],
  });
  const parallelism = o.parallelism ?? 2;
  let client: ClusterClient;
  let jobId: string;
  try {
    const loaded = await loadJobModule(jobFile, { cacheDir: join(h.dir, 'c') });
    client = await h.client();
    ({ jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism, params }).spec,
      params,
      buildParallelism: parallelism,
      checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 300, maxRestartsOnWorkerLoss: 30, ...o.checkpoint },
    }));
  } catch (err) {
    // Nothing of the cluster outlives a start that failed (its processes would hold the test file open).
    await h.close();
    throw err;
  }
  const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
  const checkpointAfter = async (after: number): Promise<number | undefined> => {
    for (;;) {
      const v = await view();
      assert.ok(v.state !== 'FAILED' && v.state !== 'CANCELED', `job ${v.state}: ${v.error ?? ''}`);
      if (v.state === 'FINISHED') return undefined;
      const newest =
        (
          await h.http<{ checkpoints: { checkpointId: number }[] }>(`/api/v1/jobs/${jobId}/checkpoints`)
        ).body.checkpoints.at(-1)?.checkpointId ?? 0;
      if (v.state === 'RUNNING' && newest > after) return newest;
      await sleep(50);
    }
  };
  const checkpoints = async (n: number): Promise<void> => {
    let at = 0;
    for (let i = 0; i < n; i++) {
      const next = await checkpointAfter(at);
      assert.ok(next !== undefined, `the job finished before its checkpoint ${i + 1} of ${n}: give it more records`);
      at = next;
    }
  };
  return { h, client, jobId, view, checkpointAfter, checkpoints };
}

/** Rescale the pipe's job to each parallelism in turn, each after two more checkpoints; every rescale must succeed and none may restart it. */
export async function rescaleInTurn(pipe: Pipe, parallelisms: number[]): Promise<void> {
  for (const parallelism of parallelisms) {
    await pipe.checkpoints(2);
    const r = await pipe.client.rescale(pipe.jobId, parallelism);
    assert.equal(r.ok, true, r.message);
  }
  const view = await pipe.view();
  assert.equal(view.rescales.length, parallelisms.length);
  assert.equal(view.restarts.length, 0, 'a rescale is not a restart');
}

/**
 * kill -9 a worker running one of the job's subtasks `times` times, each after a new checkpoint and a
 * random pause, adding a worker each time to keep the capacity; `before(i)` runs ahead of kill i.
 * Returns what it did, for the failure message.
 */
export async function killWorkersAtRandom(
  pipe: Pipe,
  random: () => number,
  times: number,
  before?: (i: number) => Promise<string | undefined>,
): Promise<string[]> {
  const log: string[] = [];
  let at = 0;
  for (let kill = 0; kill < times; kill++) {
    const next = await pipe.checkpointAfter(at);
    // A job that ends before every kill was played proves less than asked: say so rather than wait for ever.
    assert.ok(
      next !== undefined,
      `the job finished before kill ${kill + 1} of ${times} (${log.join('; ') || 'none yet'}): give it more records`,
    );
    at = next;
    const did = await before?.(kill);
    if (did) log.push(did);
    await sleep(Math.floor(random() * 700));
    const running = (await pipe.view()).subtasks.filter((s) => !s.finished).map((s) => s.workerId);
    if (running.length === 0) break;
    const victim = running[Math.floor(random() * running.length)]!;
    pipe.h.worker(victim).child.kill('SIGKILL');
    log.push(`kill -9 ${victim} after checkpoint ${at}`);
    await pipe.h.addWorker();
  }
  return log;
}

/**
 * Flip a byte of a state file of the job's newest completed checkpoint and kill -9 a worker running it.
 * A checkpoint may complete between the two, and the restart then resumes from it with nothing to fall
 * back past: that attempt is played again, until the restart reads the damaged checkpoint as its newest.
 */
export async function damageNewestThenKill(
  h: ClusterHarness,
  jobId: string,
  ckpt: string,
): Promise<{ damaged: number; file: string }> {
  const markerDir = join(ckpt, '_jobs', jobId);
  for (let attempt = 0; attempt < 10; attempt++) {
    let newest = 0;
    await waitFor(`job ${jobId} running with two checkpoints`, async () => {
      const v = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
      const ids = (await readdir(markerDir).catch(() => [] as string[]))
        .map((n) => /^COMPLETED-(\d+)$/.exec(n)?.[1])
        .filter((x) => x !== undefined)
        .map(Number);
      newest = Math.max(0, ...ids);
      return v.state === 'RUNNING' && ids.length >= 2;
    });
    const marker = JSON.parse(await readFile(join(markerDir, `COMPLETED-${newest}`), 'utf8')) as CompletedMarker;
    const file = join(marker.stateDir, `${marker.subtasks[0]}.state`);
    const bytes = await readFile(file);
    bytes[bytes.length - 1]! ^= 0x01;
    await writeFile(file, bytes);
    const restartsBefore = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body.restarts.length;
    const victim = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body.subtasks.find((s) => !s.finished)!.workerId;
    h.worker(victim).child.kill('SIGKILL');
    await h.addWorker();
    let view!: JobView;
    await waitFor(
      `the restart of job ${jobId} after kill -9 of ${victim}`,
      async () => {
        view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
        return view.state === 'FAILED' || (view.state === 'RUNNING' && view.restarts.length > restartsBefore);
      },
      60_000,
    );
    if (view.state === 'FAILED' || view.restarts.at(-1)!.restoredFrom < newest) return { damaged: newest, file };
  }
  throw new Error('a newer checkpoint completed before every restart: never fell back');
}
