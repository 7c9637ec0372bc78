// A job submitted with a restore point keeps it until it completes a checkpoint of its own: a restart
// before then resumes from that point, never from the beginning (which duplicates everything the
// restored state had already counted).
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { runJob } from '../../src/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { SCENARIO, visibleLines } from '../helpers.js';

const SINK_JOB = resolve(import.meta.dirname, '../fixtures/jobs/ckpt-file-sink.ts');
/** The timestamp of the fixture's last record (row 19,999): always after any restore point. */
const LAST_TS = 1_000 + 4 * 19_999;

/**
 * Run the windowed file-sink job until it has completed two checkpoints, cancel it, and return what
 * resubmitting it from its checkpoint needs.
 */
async function cancelledMidStream(h: ClusterHarness, checkpointsRetained = 1) {
  const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(h.dir, 'c') });
  const expectedDir = join(h.dir, 'expected');
  await runJob(loaded.job, { parallelism: 2, params: { out: expectedDir } });
  const out = join(h.dir, 'out');
  const ckpt = join(h.dir, 'ckpt');
  const client = await h.client();
  const params = { out, rate: '8000' };
  const first = await client.submit({
    module: loaded,
    spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
    params,
    buildParallelism: 2,
    checkpoint: { checkpointDir: ckpt, intervalMs: 150, checkpointsRetained },
  });
  let done: { checkpointId: number }[] = [];
  for (let i = 0; i < 400 && done.length < 2; i++) {
    await sleep(25);
    done = (await h.http<{ checkpoints: { checkpointId: number }[] }>(`/api/v1/jobs/${first.jobId}/checkpoints`)).body
      .checkpoints;
  }
  assert.ok(done.length >= 2, 'checkpoints completed while it ran');
  await client.cancel(first.jobId);
  assert.equal((await client.waitForCompletion(first.jobId)).state, 'CANCELED');
  const restored = (
    await h.http<{ checkpoints: { checkpointId: number }[] }>(`/api/v1/jobs/${first.jobId}/checkpoints`)
  ).body.checkpoints.at(-1)!.checkpointId;
  const restoreFromDir = join(ckpt, '_jobs', first.jobId);
  /** Submit the job again from its checkpoint, with periodic checkpoints off. */
  const resubmit = (p: Record<string, string>, allowDuplicatesOnFallback = false) =>
    client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params: p }).spec,
      params: p,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, restoreFromDir, allowDuplicatesOnFallback },
    });
  return { loaded, client, out, ckpt, restoreFromDir, restored, resubmit, expected: await visibleLines(expectedDir) };
}

describe('the restore point a job was submitted with', () => {
  test(
    'restored, then kill -9 of a worker before its first checkpoint: the restart resumes from the restore point and the output is exact',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 3, slots: 4 });
      try {
        const r = await cancelledMidStream(h);
        // No periodic checkpoints: the only restore point until the end is the one submitted with.
        const params = { out: r.out, rate: '3000' };
        const second = await r.resubmit(params);
        const running = await h.waitForJob<JobView>(second.jobId, ['RUNNING']);
        h.worker(running.subtasks[0]!.workerId).child.kill('SIGKILL');
        const done = await r.client.waitForCompletion(second.jobId);
        assert.equal(done.ok, true, done.error);
        const view = (await h.http<JobView>(`/api/v1/jobs/${second.jobId}`)).body;
        assert.equal(view.restarts.length, 1, JSON.stringify(view.restarts));
        assert.equal(view.restarts[0]!.restoredFrom, r.restored, 'resumed from the checkpoint it was submitted with');
        await h.waitForLog(
          h.coordinator,
          new RegExp(
            `^job ${second.jobId} \\(ckpt-file-sink\\) redeployed as attempt 1 from checkpoint ${r.restored} of .* \\(the restore point it was submitted with; none of its own had completed\\)$`,
          ),
        );
        // Both deploys say what they restored.
        const restores = h.coordinator.logs.filter((l) =>
          new RegExp(
            `^restored job ${second.jobId} from .*chk-${r.restored} \\(checkpoint ${r.restored}, 6 operators\\)$`,
          ).test(String(l.msg)),
        );
        assert.equal(restores.length, 2, JSON.stringify(h.coordinator.logs.map((l) => l.msg)));
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
      } finally {
        await h.close();
      }
    },
  );

  test(
    'restored, then a subtask fails before its first checkpoint: the restart resumes from the restore point and the output is exact',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 4 });
      try {
        const r = await cancelledMidStream(h);
        const params = { out: r.out, failTs: String(LAST_TS), markers: h.dir };
        const second = await r.resubmit(params);
        const done = await r.client.waitForCompletion(second.jobId);
        assert.equal(done.ok, true, done.error);
        const view = (await h.http<JobView>(`/api/v1/jobs/${second.jobId}`)).body;
        assert.equal(view.restarts.length, 1, JSON.stringify(view.restarts));
        assert.match(view.restarts[0]!.cause, new RegExp(`record at ${LAST_TS} fails once`));
        assert.equal(view.restarts[0]!.restoredFrom, r.restored);
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
      } finally {
        await h.close();
      }
    },
  );

  test(
    'a flipped byte in a state file of the newest checkpoint: a fallback past what the file sink committed is refused, naming the file, the sink and the flag; with --allow-duplicates-on-fallback it goes ahead at-least-once',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 4 });
      try {
        const r = await cancelledMidStream(h, 2);
        const chk = join(r.restoreFromDir, `chk-${r.restored}`);
        const victim = join(
          chk,
          (await readdir(chk)).find((n) => n.endsWith('.state'))!,
        );
        const bytes = await readFile(victim);
        bytes[bytes.length - 1]! ^= 0x01;
        await writeFile(victim, bytes);
        const committed = await visibleLines(r.out);
        const params = { out: r.out };
        await assert.rejects(
          r.resubmit(params),
          (e: Error) =>
            new RegExp(
              `^submit refused: checkpoint ${r.restored} is unusable \\(state file .* is damaged: its SHA-256 is [0-9a-f]{64}, the marker records [0-9a-f]{64}\\); the restore of ckpt-file-sink cannot fall back to checkpoint \\d+: sinks '_inline_file_0' \\(file\\) would publish again what they committed up to checkpoint ${r.restored}; repair the damaged files of checkpoint ${r.restored}, or restore with --allow-duplicates-on-fallback`,
            ).test(e.message) && e.message.includes(victim),
        );
        assert.deepEqual(await visibleLines(r.out), committed, 'the refusal wrote nothing');
        const second = await r.resubmit(params, true);
        const view = (await h.http<JobView>(`/api/v1/jobs/${second.jobId}`)).body;
        assert.deepEqual(view.guarantee, {
          level: 'at-least-once',
          limitedBy:
            "--allow-duplicates-on-fallback (a restore older than what sink '_inline_file_0' committed writes that again)",
        });
        const done = await r.client.waitForCompletion(second.jobId);
        assert.equal(done.ok, true, done.error);
        const line = await h.waitForLog(
          h.coordinator,
          new RegExp(
            `^checkpoint ${r.restored} is unusable \\(state file .* is damaged: .*\\); the restore of ckpt-file-sink falls back to checkpoint (\\d+): sinks '_inline_file_0' \\(file\\) publish again what they committed after it \\(--allow-duplicates-on-fallback\\)$`,
          ),
        );
        assert.ok(Number(line.restoredFrom) < r.restored, `fell back to an older checkpoint: ${String(line.msg)}`);
        // Records the skipped checkpoint had committed are written again: every result, some twice.
        assert.deepEqual(
          [...new Set(await visibleLines(r.out))].sort(),
          [...new Set(r.expected)].sort(),
          'every window result, nothing else',
        );
      } finally {
        await h.close();
      }
    },
  );

  test(
    'two restore submits racing for the same slots: one deploys, the other is refused; no slot is booked twice',
    SCENARIO,
    async () => {
      // One worker of 2 slots; each run needs both (two pipeline instances, slots shared). Before, both
      // placed on the same free slots while writing their RESTORED records, and both deployed. A submit
      // that finds no free slots is refused at once (it does not wait for the other to end).
      const h = await ClusterHarness.start({ workers: 1, slots: 2, coordinatorArgs: ['--submit-wait-for-slots-ms=0'] });
      try {
        const r = await cancelledMidStream(h);
        const other = await h.client();
        const params = { out: join(h.dir, 'out-race'), rate: '2000' };
        const submit = (client: typeof r.client) =>
          client.submit({
            module: r.loaded,
            spec: buildJob(r.loaded.job, { parallelism: 2, params }).spec,
            params,
            buildParallelism: 2,
            checkpoint: { checkpointDir: r.ckpt, restoreFromDir: r.restoreFromDir },
          });
        const results = await Promise.allSettled([submit(r.client), submit(other)]);
        const accepted = results.filter((x) => x.status === 'fulfilled');
        const refused = results.filter((x): x is PromiseRejectedResult => x.status === 'rejected');
        assert.equal(accepted.length, 1, JSON.stringify(results.map((x) => x.status)));
        assert.match(
          String(refused[0]!.reason),
          /not enough free slots: the job needs 2 \(slot sharing group 'default': 2\), 0 of the cluster's 2 are free/,
        );
        const workers = (await h.http<{ workers: { slotsFree: number }[] }>('/api/v1/workers')).body.workers;
        assert.equal(workers[0]!.slotsFree, 0);
        const all = (await h.http<{ jobs: { jobId: string; state: string; error?: string }[] }>('/api/v1/jobs')).body
          .jobs;
        const jobs = all.filter((j) => j.state === 'DEPLOYING' || j.state === 'RUNNING');
        // Once seen failing on CI (none DEPLOYING or RUNNING): say what each job was, and why.
        assert.equal(
          jobs.length,
          1,
          `one job holds the slots: ${JSON.stringify(all.map((j) => [j.jobId, j.state, j.error]))}`,
        );
      } finally {
        await h.close();
      }
    },
  );

  test(
    'a checkpoint of one job restored into another job (same operators, another name) is refused naming both',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 1, slots: 4 });
      try {
        const r = await cancelledMidStream(h);
        const params = { out: r.out };
        await assert.rejects(
          r.client.submit({
            module: r.loaded,
            name: 'clicks-per-minute',
            spec: buildJob(r.loaded.job, { parallelism: 2, params }).spec,
            params,
            buildParallelism: 2,
            checkpoint: { restoreFromDir: r.restoreFromDir },
          }),
          new RegExp(
            `restore refused: checkpoint ${r.restored} was taken of job 'ckpt-file-sink', this job is 'clicks-per-minute'`,
          ),
        );
        assert.equal(
          (await h.http<{ workers: { slotsFree: number }[] }>('/api/v1/workers')).body.workers[0]!.slotsFree,
          4,
          'nothing deployed',
        );
      } finally {
        await h.close();
      }
    },
  );
});
