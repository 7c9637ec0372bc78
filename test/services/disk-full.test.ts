// A full disk under the checkpoint directory at the worst moment: a real tmpfs of a few MiB, filled up
// while a bounded job runs. Its final checkpoint fails and the job restarts within its budget; the
// restart cannot write its RESTORED record either and tries again with its backoff; aborted checkpoints
// leave no state behind. Once space is back the job ends with every record exactly once. Needs root to
// mount (npm run test:services, as CI runs it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { SCENARIO, visibleLines, waitFor } from '../helpers.js';

/** Write zeros to `path` until the disk refuses (ENOSPC). */
async function fillDisk(path: string): Promise<void> {
  const fh = await open(path, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) await fh.write(chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    await fh.close();
  }
}

test(
  'a full disk at the final checkpoint and at the restart: retried within the restart budget, aborted checkpoints leave nothing, and once space is back every record exactly once',
  SCENARIO,
  async (t) => {
    assert.equal(process.getuid?.(), 0, 'mounting a tmpfs needs root: run npm run test:services as root, as CI does');
    const h = await ClusterHarness.start({
      workers: 2,
      slots: 2,
      coordinatorArgs: ['--restart-backoff-initial-ms=200', '--restart-backoff-max-ms=2000'],
    });
    const disk = join(h.dir, 'disk');
    await mkdir(disk);
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk], { encoding: 'utf8' });
    assert.equal(mount.status, 0, `mount -t tmpfs: ${mount.stderr}`);
    t.after(async () => {
      // Lazily: the nodes may still hold files there until close() stops them.
      spawnSync('umount', ['-l', disk]);
      await h.close();
    });
    const ckpt = join(disk, 'ckpt');
    const filler = join(disk, 'filler');
    const r = await submitSinkJob(h, { rate: 3000, intervalMs: 300, checkpoint: { checkpointDir: ckpt } });
    const jobDir = join(ckpt, '_jobs', r.jobId);
    await waitFor(
      'a completed checkpoint',
      async () => (await h.http<JobView>(`/api/v1/jobs/${r.jobId}`)).body.checkpointsCompleted > 0,
    );
    await fillDisk(filler);
    // The input ends while the disk is full: the final checkpoint fails, and the job restarts.
    await h.waitForLog(h.coordinator, new RegExp(`^the final checkpoint of job ${r.jobId} failed: `));
    await h.waitForLog(
      h.coordinator,
      new RegExp(
        `^job ${r.jobId} \\(ckpt-file-sink\\): the redeploy after its final checkpoint failed: .* failed: .*ENOSPC.*; trying again in \\d+ ms \\(restart \\d+ of 10\\)$`,
      ),
      60_000,
    );
    const view = (await h.http<JobView>(`/api/v1/jobs/${r.jobId}`)).body;
    assert.equal(view.state, 'RESTARTING', 'still healing, not FAILED');
    // What the aborted checkpoints wrote is gone: only the newest completed one's state is on the disk.
    const completed = (await readdir(jobDir))
      .filter((n) => /^COMPLETED-\d+$/.test(n))
      .map((n) => Number(n.slice('COMPLETED-'.length)));
    const stateDirs = (await readdir(jobDir)).filter((n) => /^chk-\d+$/.test(n)).map((n) => Number(n.slice(4)));
    assert.deepEqual(
      stateDirs,
      completed,
      `state of aborted checkpoints left behind: ${JSON.stringify({ stateDirs, completed })}`,
    );
    await rm(filler);
    const done = await r.client.waitForCompletion(r.jobId);
    assert.equal(done.ok, true, done.error);
    assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
    const ended = (await h.http<JobView>(`/api/v1/jobs/${r.jobId}`)).body;
    assert.ok(
      ended.restarts.some((x) => x.cause.startsWith('its final checkpoint failed: ')),
      JSON.stringify(ended.restarts),
    );
    assert.deepEqual(ended.commits.owed, [], 'every commit confirmed');
  },
);
