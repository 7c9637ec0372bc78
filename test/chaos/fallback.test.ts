// A running job whose newest checkpoint is damaged, then a worker killed: the restart may only fall back
// to an older checkpoint where nothing it committed would be published again. The transactional file
// sink makes that a refusal (the job fails, naming the checkpoint, the sink and the flag) unless the job
// allows duplicates on fallback, when it restarts from the one before and reports at-least-once.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { damageNewestThenKill } from '../harness/chaos-job.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { SCENARIO, visibleLines } from '../helpers.js';

async function start(h: ClusterHarness, allowDuplicatesOnFallback: boolean) {
  const r = await submitSinkJob(h, {
    rate: 1500,
    intervalMs: 300,
    checkpoint: { checkpointsRetained: 3, allowDuplicatesOnFallback },
  });
  return { ...r, ckpt: join(h.dir, 'ckpt') };
}

describe('a damaged newest checkpoint at a restart', () => {
  test(
    'kill -9 of a worker: the restart refuses to publish again what the file sink committed; the job fails naming the checkpoint, the sink and the flag, and nothing is written twice',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({
        workers: 2,
        slots: 2,
        coordinatorArgs: ['--restart-backoff-initial-ms=100'],
      });
      try {
        const r = await start(h, false);
        const { damaged, file } = await damageNewestThenKill(h, r.jobId, r.ckpt);
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.state, 'FAILED');
        assert.match(
          done.error,
          new RegExp(
            `checkpoint ${damaged} is unusable \\(state file .* is damaged: .*\\); job ${r.jobId} cannot fall back to checkpoint \\d+: sinks '_inline_file_0' \\(file\\) would publish again what they committed up to checkpoint ${damaged}; repair the damaged files of checkpoint ${damaged}, or restore with --allow-duplicates-on-fallback`,
          ),
        );
        assert.ok(done.error.includes(file), done.error);
        const lines = await visibleLines(r.out);
        assert.equal(new Set(lines).size, lines.length, 'no window result twice');
        assert.ok(
          lines.every((l) => r.expected.includes(l)),
          'only results of the job',
        );
      } finally {
        await h.close();
      }
    },
  );

  test(
    'with --allow-duplicates-on-fallback: the restart falls back, logs the sink that publishes again, reports at-least-once and ends with every result',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({
        workers: 2,
        slots: 2,
        coordinatorArgs: ['--restart-backoff-initial-ms=100'],
      });
      try {
        const r = await start(h, true);
        const submitted = (await h.http<JobView>(`/api/v1/jobs/${r.jobId}`)).body;
        assert.equal(submitted.guarantee.level, 'at-least-once', 'reported from the start: a fallback may write twice');
        const { damaged } = await damageNewestThenKill(h, r.jobId, r.ckpt);
        await h.waitForLog(
          h.coordinator,
          new RegExp(
            `^checkpoint ${damaged} is unusable \\(.*\\); job ${r.jobId} falls back to checkpoint \\d+: sinks '_inline_file_0' \\(file\\) publish again what they committed after it \\(--allow-duplicates-on-fallback\\)$`,
          ),
        );
        const done = await r.client.waitForCompletion(r.jobId);
        assert.equal(done.ok, true, done.error);
        assert.deepEqual(
          [...new Set(await visibleLines(r.out))].sort(),
          [...new Set(r.expected)].sort(),
          'every window result, some twice',
        );
      } finally {
        await h.close();
      }
    },
  );
});
