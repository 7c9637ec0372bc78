// Rescale on a real cluster, by drain and replan and in place (hot cutover): a keyed window job writing
// through the transactional file sink, rescaled 2 -> 3 -> 1 -> 4 while it runs, must write exactly what
// an uninterrupted run writes.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import { visibleLines } from '../helpers.js';
import { join, resolve } from 'node:path';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { submitSinkJob, type SubmittedSinkJob } from '../harness/file-sink-job.js';
import type { JobView } from '../../src/coordinator/index.js';

/** The rescales came mid-stream; the job then ends with every window result exactly once and no part left hidden. */
async function endsExactlyOnce(
  h: ClusterHarness,
  { jobId, client, out, expected }: SubmittedSinkJob,
): Promise<JobView> {
  assert.ok((await visibleLines(out)).length < expected.length, 'the rescales came mid-stream');
  const done = await client.waitForCompletion(jobId);
  assert.equal(done.ok, true, done.error);
  assert.deepEqual(await visibleLines(out), expected, 'every window result exactly once');
  assert.deepEqual(
    (await readdir(out)).filter((n) => n.startsWith('.')),
    [],
    'no hidden leftovers',
  );
  return (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
}

test('a keyed window job rescaled 2 -> 3 -> 1 -> 4 under load writes the uninterrupted output exactly once, spending no restart', async () => {
  const h = await ClusterHarness.start({ workers: 2, slots: 4 });
  try {
    // 20 000 rows at 1 500 a second: over ten seconds of input, time for three rescales mid-stream.
    const { jobId, client, out, expected } = await submitSinkJob(h, { intervalMs: 300, rate: 1_500 });
    await h.waitForJob(jobId, ['RUNNING']);
    for (const [parallelism, change] of [
      [3, /_inline_source_0 2 -> 3/],
      [1, /_inline_source_0 3 -> 1/],
      [4, /_inline_source_0 1 -> 4/],
    ] as const) {
      const r = await client.rescale(jobId, parallelism);
      assert.equal(r.ok, true, r.message);
      assert.match(
        r.message,
        new RegExp(`^job ${jobId} rescaled \\(.*${change.source}.*\\) from checkpoint \\d+; it paused \\d+ ms$`),
      );
      const view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
      assert.equal(view.state, 'RUNNING');
      assert.equal(view.subtasks.filter((t) => t.taskId === '_inline_source_0' && !t.finished).length, parallelism);
    }
    const view = await endsExactlyOnce(h, { jobId, client, out, expected });
    assert.equal(view.rescales.length, 3);
    assert.equal(view.restarts.length, 0, 'a rescale is not a restart');
    assert.ok(
      view.rescales.every((r) => r.runningAt !== undefined && r.restoredFrom > 0 && r.cause.startsWith('client ')),
    );
    // Every task changes: none could run on, so 'auto' drains and replans.
    assert.ok(view.rescales.every((r) => r.mode === 'drain-and-replan'));
    client.close();
  } finally {
    await h.close();
  }
});

test('rescale refusals name what is wrong and what would be accepted, and leave the job running', async () => {
  const h = await ClusterHarness.start({ workers: 1, slots: 4 });
  try {
    const { jobId, client } = await submitSinkJob(h, { intervalMs: 300, rate: 500 });
    await h.waitForJob(jobId, ['RUNNING']);
    const refused = async (parallelism: number, operators: Record<string, number>, message: RegExp): Promise<void> => {
      const r = await client.rescale(jobId, parallelism, operators);
      assert.equal(r.ok, false);
      assert.match(r.message, message);
    };
    await refused(
      0,
      { nope: 2 },
      new RegExp(
        `^rescale of job ${jobId} refused: job 'ckpt-file-sink' has no operator 'nope'; its operators are _inline_source_0, `,
      ),
    );
    await refused(
      200,
      {},
      /keyed operator '.*' has parallelism 200, above the 128 key groups; set a parallelism of at most 128 \(reachable values: 1\.\.128\)$/,
    );
    await refused(
      5,
      {},
      /at the new parallelism it needs 5 slots, and the cluster's workers have 4; add workers or ask for less$/,
    );
    await refused(2, {}, /it already runs at that parallelism$/);
    // In place only when some task runs on beside the changed ones: a whole-job change cannot be.
    const hot = await client.rescale(jobId, 1, {}, undefined, 'hot');
    assert.equal(hot.ok, false);
    assert.match(
      hot.message,
      /refused: it cannot be rescaled in place: every task changes parallelism, so none would keep running; rescale it with --mode replan$/,
    );
    assert.equal(
      (await h.http(`/api/v1/jobs/${jobId}/rescale`, { method: 'POST', body: { parallelism: 1, mode: 'sideways' } }))
        .status,
      400,
    );
    const http = await h.http<{ code: string; message: string }>(`/api/v1/jobs/${jobId}/rescale`, {
      method: 'POST',
      body: { operators: { nope: 3 } },
    });
    assert.equal(http.status, 400);
    assert.equal(http.body.code, 'CLINK_ERR_INVALID_ARGUMENT');
    assert.equal((await h.http(`/api/v1/jobs/nope/rescale`, { method: 'POST', body: { parallelism: 2 } })).status, 404);
    assert.equal((await h.http(`/api/v1/jobs/${jobId}/rescale`, { method: 'POST', body: {} })).status, 400);
    assert.equal((await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body.state, 'RUNNING');
    // And over HTTP a rescale that can be done is.
    const ok = await h.http<{ ok: boolean; changes: string[]; pauseMs: number }>(`/api/v1/jobs/${jobId}/rescale`, {
      method: 'POST',
      body: { parallelism: 1 },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.ok(ok.body.changes.some((c) => /2 -> 1$/.test(c)));
    await client.cancel(jobId);
    client.close();
  } finally {
    await h.close();
  }
});

test('--operator rescales the task (chain) that holds the operator, and nothing else', async () => {
  const h = await ClusterHarness.start({ workers: 1, slots: 3 });
  try {
    const loaded = await loadJobModule(resolve(import.meta.dirname, '../fixtures/jobs/throttled.ts'), {
      cacheDir: join(h.dir, 'c'),
    });
    const params = { load: join(h.dir, 'no-load'), rate: '500' };
    const client = await h.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
      checkpoint: { checkpointDir: join(h.dir, 'ck') },
    });
    await h.waitForJob(jobId, ['RUNNING']);
    const r = await client.rescale(jobId, 0, { work: 3 });
    assert.equal(r.ok, true, r.message);
    assert.match(r.message, /\(work 1 -> 3\)/);
    const view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    const running = (task: string): number => view.subtasks.filter((t) => t.taskId === task && !t.finished).length;
    assert.deepEqual([running('_inline_source_0'), running('work')], [1, 3]);
    await client.cancel(jobId);
    client.close();
  } finally {
    await h.close();
  }
});

test('the same job rescaled 2 -> 3 -> 1 -> 4 in place (hot cutover): its sources and its sink run on, only the window task is replaced, exactly once', async () => {
  const h = await ClusterHarness.start({ workers: 2, slots: 4 });
  try {
    // The sink apart: the window task has a task feeding it (the sources) and one it feeds (the sink).
    const { jobId, client, out, expected } = await submitSinkJob(h, {
      intervalMs: 300,
      rate: 1_500,
      params: { sinkApart: '1' },
    });
    await h.waitForJob(jobId, ['RUNNING']);
    const before = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
    const tasks = [...new Set(before.subtasks.map((t) => t.taskId))];
    assert.equal(tasks.length, 3, tasks.join());
    const windowTask = tasks.find((t) => t.includes('window'))!;
    const sinkTask = tasks.find((t) => t !== windowTask && t !== '_inline_source_0')!;
    for (const parallelism of [3, 1, 4]) {
      const r = await client.rescale(jobId, 0, { [windowTask]: parallelism }, undefined, 'hot');
      assert.equal(r.ok, true, r.message);
      assert.match(
        r.message,
        new RegExp(
          `^job ${jobId} rescaled in place \\(${windowTask} \\d -> ${parallelism}\\) from checkpoint \\d+; the tasks beside them paused \\d+ ms$`,
        ),
      );
      const view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
      assert.equal(view.state, 'RUNNING');
      assert.equal(view.subtasks.filter((t) => t.taskId === windowTask && !t.finished).length, parallelism);
      assert.equal(
        view.subtasks.filter((t) => t.taskId === '_inline_source_0' && !t.finished).length,
        2,
        'the sources ran on',
      );
      assert.equal(view.subtasks.filter((t) => t.taskId === sinkTask && !t.finished).length, 2, 'the sinks ran on');
    }
    const view = await endsExactlyOnce(h, { jobId, client, out, expected });
    assert.deepEqual(
      view.rescales.map((r) => r.mode),
      ['hot-cutover', 'hot-cutover', 'hot-cutover'],
    );
    assert.equal(view.restarts.length, 0, 'a rescale is not a restart');
    client.close();
  } finally {
    await h.close();
  }
});
