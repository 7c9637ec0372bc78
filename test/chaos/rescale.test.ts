// kill -9 of a worker while a rescale is under way, at a seeded moment, by drain and replan and in
// place (there, within the cutover's steps): before its checkpoint completes (the job restarts at its old parallelism and the rescale is
// refused, saying why) or after it (the loss is absorbed and the job runs rescaled on the survivors; a
// hot cutover cut short restarts from its checkpoint). Either way the file sink's output is the
// uninterrupted run's, every window result once. CLINK_CHAOS_SEEDS=<seed> replays.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { chaosSeed, prng } from '../harness/chaos-job.js';
import { ClusterHarness } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { SCENARIO, visibleLines } from '../helpers.js';

const SEED = chaosSeed();

for (const mode of ['replan', 'hot'] as const) {
  test(
    `kill -9 of a worker during a rescale (${mode}): refused or completed, the output exactly once (seed ${SEED})`,
    SCENARIO,
    async (t) => {
      const random = prng(SEED);
      const h = await ClusterHarness.start({ workers: 3, slots: 4 });
      try {
        // In place: the sink is a task of its own, so the window task has a task on each side that runs on.
        const { jobId, client, out, expected } = await submitSinkJob(h, {
          intervalMs: 300,
          rate: 1_500,
          ...(mode === 'hot' ? { params: { sinkApart: '1' } } : {}),
        });
        const view = async (): Promise<JobView> => (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
        while (
          (await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).body.checkpoints.length === 0
        )
          await sleep(25);
        const running = (await view()).subtasks.filter((s) => !s.finished);
        const victim = running[Math.floor(random() * running.length)]!.workerId;
        const windowTask = running.find((s) => s.taskId.includes('window'))!.taskId;
        const rescale =
          mode === 'hot'
            ? client.rescale(jobId, 0, { [windowTask]: 3 }, undefined, 'hot')
            : client.rescale(jobId, 3, {}, undefined, 'replan');
        // Drain and replan: the plan thread takes a few hundred ms before the checkpoint starts; the rest
        // follows it. In place: from the moment the workers are armed, over the cutover's ~100 ms.
        if (mode === 'hot') await h.waitForLog(h.coordinator, new RegExp(`^hot rescale of job ${jobId} armed `));
        const delayMs = Math.floor(random() * (mode === 'hot' ? 150 : 1_500));
        await sleep(delayMs);
        h.worker(victim).child.kill('SIGKILL');
        const r = await rescale;
        if (!r.ok) assert.match(r.message, new RegExp(`^rescale of job ${jobId} refused: `));
        const done = await client.waitForCompletion(jobId);
        assert.equal(done.ok, true, done.error);
        assert.deepEqual(
          await visibleLines(out),
          expected,
          `every window result exactly once (seed ${SEED}, kill after ${delayMs} ms, rescale: ${r.message})`,
        );
        const after = await view();
        assert.ok(
          after.subtasks.every((s) => s.workerId !== victim || s.finished),
          'nothing runs on the dead worker',
        );
        t.diagnostic(
          `kill after ${delayMs} ms; rescale ${r.ok ? 'completed' : 'refused'}: ${r.message}; restarts ${after.restarts.length}`,
        );
        client.close();
      } finally {
        await h.close();
      }
    },
  );
}
