// The disk state backend through kill -9: a keyed ValueState per key (bench/jobs/big-state.ts, whose
// job fails if a record is counted twice and says how many keys reached their count and their sum) on
// workers whose cache holds a fraction of the keys, so state goes through LMDB, its checkpoints and a
// restore on another worker. The job leaves its backend to the cluster: the coordinator's
// --default-state-backend-type disk decides.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { waitFor } from '../helpers.js';

const BIG_STATE_JOB = resolve(import.meta.dirname, '../../bench/jobs/big-state.ts');
const KEYS = 200_000;

test(
  'kill -9 of a worker holding disk state: the job restores from its checkpoint on another and every key is counted exactly twice',
  { timeout: 180_000 },
  async () => {
    const localStateDir = mkdtempSync(join(tmpdir(), 'clink-chaos-local-state-'));
    const h = await ClusterHarness.start({
      workers: 2,
      slots: 2,
      coordinatorArgs: ['--default-state-backend-type=disk', '--restart-backoff-initial-ms=200'],
      // A cache of a thousand keys per state: most of the 100,000 keys a subtask holds are in LMDB.
      workerArgs: [`--local-state-dir=${localStateDir}`, '--state-cache-entries=1000'],
    });
    try {
      const loaded = await loadJobModule(BIG_STATE_JOB, { cacheDir: join(h.dir, 'c') });
      const out = join(h.dir, 'out');
      const params = { keys: String(KEYS), out };
      const client = await h.client();
      const { jobId } = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
        params,
        buildParallelism: 2,
        checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 300 },
      });
      const view = async (): Promise<JobView & { checkpointConfig: { stateBackendType: string } }> =>
        (await h.http<JobView & { checkpointConfig: { stateBackendType: string } }>(`/api/v1/jobs/${jobId}`)).body;
      assert.equal(
        (await view()).checkpointConfig.stateBackendType,
        'disk',
        "the coordinator's default, resolved at submit",
      );
      await waitFor('a checkpoint with state in it', async () => {
        const { checkpoints } = (
          await h.http<{ checkpoints: { stateBytes: number }[] }>(`/api/v1/jobs/${jobId}/checkpoints`)
        ).body;
        return checkpoints.some((c) => c.stateBytes > 0);
      });
      const victim = (await view()).subtasks.find((s) => !s.finished)?.workerId;
      assert.ok(victim, 'a subtask still runs');
      h.worker(victim).child.kill('SIGKILL');
      await h.addWorker();
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.ok, true, done.error);
      assert.ok((await view()).restarts.length >= 1, 'the job restarted from its checkpoint');
      const lines = readdirSync(out)
        .filter((f) => !f.startsWith('.'))
        .map((f) => readFileSync(join(out, f), 'utf8').trim())
        .filter(Boolean);
      assert.deepEqual(lines, [JSON.stringify({ keys: KEYS, sum: (KEYS * (KEYS - 1)) / 2 })]);
      // The stores go with the job: the killed worker's is removed by the next store opened there (the
      // restart's) or the next worker started there, and the others' close with their subtasks, which
      // report their end before they close.
      await waitFor('every store removed', () =>
        readdirSync(localStateDir, { recursive: true, withFileTypes: true }).every((e) => e.isDirectory()),
      );
    } finally {
      await h.close();
      rmSync(localStateDir, { recursive: true, force: true });
    }
  },
);
