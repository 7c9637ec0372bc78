// One bad job never takes down the cluster: a map that never returns and a map that allocates without
// bound run beside a healthy job on three workers. Each poison job fails with its real cause (after
// its restart budget, with backoff, where a restart could help); the healthy job's output is exact;
// every worker is still registered, on its first session. A keyed job on the disk backend that never
// returns leaves no store behind when its thread is terminated.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { runJob } from '../../src/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { SCENARIO, visibleLines, waitFor } from '../helpers.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/jobs');

test(
  'poison jobs (an endless loop, then an allocation bomb) fail with their real causes while a healthy job on the same workers finishes exactly; all 3 workers stay',
  SCENARIO,
  async () => {
    const localStateDir = await mkdtemp(join(tmpdir(), 'clink-poison-local-state-'));
    const h = await ClusterHarness.start({
      workers: 3,
      slots: 4,
      workerArgs: ['--task-stall-timeout-ms=2000', '--task-heap-mb=96', `--local-state-dir=${localStateDir}`],
      coordinatorArgs: ['--restart-backoff-initial-ms=300'],
    });
    try {
      // The healthy job: windows into the transactional file sink, paced to outlive both poison jobs.
      const healthy = await loadJobModule(join(FIXTURES, 'ckpt-file-sink.ts'), { cacheDir: join(h.dir, 'c') });
      const expectedDir = join(h.dir, 'expected');
      await runJob(healthy.job, { parallelism: 2, params: { out: expectedDir } });
      const out = join(h.dir, 'out');
      const client = await h.client();
      const params = { out, rate: '1500' };
      const good = await client.submit({
        module: healthy,
        spec: buildJob(healthy.job, { parallelism: 2, params }).spec,
        params,
        buildParallelism: 2,
        checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 500 },
      });
      await h.waitForJob(good.jobId, ['RUNNING']);

      const spin = await h.submit(join(FIXTURES, 'poison.ts'), {
        parallelism: 2,
        client,
        params: { mode: 'spin' },
        checkpoint: { checkpointDir: join(h.dir, 'ckpt') },
      });
      const spun = await client.waitForCompletion(spin.jobId);
      assert.equal(spun.state, 'FAILED');
      assert.match(
        spun.error,
        /^subtask '_inline_source_0 -> poisoned-map -> _inline_collect_0' \(\d\/2, _inline_source_0#\d\) made no progress for \d+ ms while reading its source and processing what it read \(user code that never returns\?\); its thread on worker w\d was terminated \(--task-stall-timeout-ms 2000\)$/,
      );
      assert.equal(
        (await h.http<JobView>(`/api/v1/jobs/${spin.jobId}`)).body.restarts.length,
        0,
        'a stall is not restarted: it would stall again',
      );

      // On the disk backend: the terminated thread could not close its store; its worker removes it.
      const keyed = await h.submit(join(FIXTURES, 'poison.ts'), {
        parallelism: 2,
        client,
        params: { mode: 'keyed-spin' },
        checkpoint: { checkpointDir: join(h.dir, 'ckpt'), stateBackendType: 'disk' },
      });
      const keyedEnd = await client.waitForCompletion(keyed.jobId);
      assert.equal(keyedEnd.state, 'FAILED');
      assert.match(keyedEnd.error, /made no progress for \d+ ms while .* its thread on worker w\d was terminated/);
      await waitFor("the stalled threads' stores removed", async () =>
        (await readdir(localStateDir, { recursive: true, withFileTypes: true })).every((e) => e.isDirectory()),
      );

      const bomb = await h.submit(join(FIXTURES, 'poison.ts'), {
        parallelism: 2,
        client,
        params: { mode: 'alloc' },
        checkpoint: { checkpointDir: join(h.dir, 'ckpt'), maxRestartsOnWorkerLoss: 2 },
      });
      const bombed = await client.waitForCompletion(bomb.jobId);
      assert.equal(bombed.state, 'FAILED');
      assert.match(
        bombed.error,
        /out of memory \(limit 96 MB, --task-heap-mb\): the job's thread on worker w\d exhausted its heap; the 2 restarts allowed are spent$/,
      );
      const restarts = (await h.http<JobView>(`/api/v1/jobs/${bomb.jobId}`)).body.restarts;
      assert.equal(restarts.length, 2);
      assert.ok(
        restarts[1]!.deployedAt - restarts[1]!.at >= 300,
        `the second restart waited its backoff: ${JSON.stringify(restarts)}`,
      );

      const done = await client.waitForCompletion(good.jobId);
      assert.equal(done.ok, true, done.error);
      assert.equal(
        (await h.http<JobView>(`/api/v1/jobs/${good.jobId}`)).body.restarts.length,
        0,
        'the healthy job never noticed',
      );
      assert.deepEqual(await visibleLines(out), await visibleLines(expectedDir), 'every window result exactly once');
      const workers = (await h.http<{ workers: { workerId: string; session: number }[] }>('/api/v1/workers')).body
        .workers;
      assert.deepEqual(
        workers.map((w) => `${w.workerId}:${w.session}`).sort(),
        ['w1:1', 'w2:2', 'w3:3'],
        'every worker on its first session',
      );
      assert.ok(!h.coordinator.logs.some((l) => /^worker lost/.test(String(l.msg))), 'no worker was lost');
    } finally {
      await h.close();
      await rm(localStateDir, { recursive: true, force: true });
    }
  },
);
