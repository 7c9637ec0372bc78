import assert from 'node:assert/strict';
import { cp, readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { runJob } from '../../src/index.js';
import { sortBy, visibleLines, waitFor } from '../helpers.js';
import { ClusterHarness } from '../harness/cluster.js';

const JOB = resolve(import.meta.dirname, '../fixtures/jobs/ckpt-keyed.ts');
const SINK_JOB = resolve(import.meta.dirname, '../fixtures/jobs/ckpt-file-sink.ts');

/** The windowed file-sink job, and the lines an uninterrupted local run of it writes. */
async function sinkJobAndOutput(
  h: ClusterHarness,
): Promise<{ loaded: Awaited<ReturnType<typeof loadJobModule>>; expected: string[] }> {
  const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(h.dir, 'c') });
  const expectedDir = join(h.dir, 'expected');
  await runJob(loaded.job, { parallelism: 2, params: { out: expectedDir } });
  return { loaded, expected: await visibleLines(expectedDir) };
}

describe('checkpoints on a cluster', () => {
  test('a job cancelled mid-stream and resubmitted from its checkpoint gives exactly the uninterrupted output, at its parallelism and rescaled to another', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 3 });
    try {
      const ckpt = join(h.dir, 'ckpt');
      const loaded = await loadJobModule(JOB, { cacheDir: join(h.dir, 'c') });
      const expected = await runJob(loaded.job, { parallelism: 2 });
      const client = await h.client();
      const params = { rate: '15000' };
      const first = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
        params,
        buildParallelism: 2,
        checkpoint: { checkpointDir: ckpt, intervalMs: 100 },
      });
      // wait for a completed checkpoint while the job still runs
      let checkpoints: { checkpointId: number; stateBytes: number }[] = [];
      for (let i = 0; i < 200 && checkpoints.length === 0; i++) {
        await sleep(25);
        checkpoints = (await h.http<{ checkpoints: typeof checkpoints }>(`/api/v1/jobs/${first.jobId}/checkpoints`))
          .body.checkpoints;
      }
      assert.ok(checkpoints.length > 0, 'a checkpoint completed');
      assert.ok(checkpoints[0]!.stateBytes > 0);
      assert.equal(
        typeof (checkpoints[0] as unknown as { alignmentMs: unknown }).alignmentMs,
        'number',
        'alignment time per checkpoint',
      );
      await h.waitForLog(
        h.coordinator,
        new RegExp(`^checkpoint \\d+ completed for job ${first.jobId} in \\d+ ms \\(\\d+ bytes\\)$`),
      );
      assert.ok((await h.metric('clink_checkpoints_completed_total')) >= 1);
      assert.ok((await h.metric('clink_checkpoint_last_size_bytes')) > 0);
      assert.match((await h.http('/metrics')).text, /^clink_checkpoint_last_alignment_ms \d+/m);
      await client.cancel(first.jobId);
      const stopped = await client.waitForCompletion(first.jobId);
      assert.equal(stopped.state, 'CANCELED', 'stopped before its end');
      const markers = (await readdir(join(ckpt, '_jobs', first.jobId))).filter((n) => n.startsWith('COMPLETED-'));
      assert.equal(markers.length, 1, 'one checkpoint retained');

      // At another parallelism the checkpoint is restored rescaled, with the same output.
      const rescaled = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 3 }).spec,
        params: {},
        buildParallelism: 3,
        checkpoint: { restoreFromDir: ckpt },
      });
      const atThree = await client.waitForCompletion(rescaled.jobId);
      assert.equal(atThree.ok, true, atThree.error);
      for (const name of ['windows', 'totals'])
        assert.deepEqual(sortBy(atThree.collected[name]!), sortBy(expected.collected[name]!), `${name} at 3`);
      await h.waitForLog(
        h.coordinator,
        new RegExp(
          `^job ${rescaled.jobId}: task _inline_source_0 is restored at parallelism 3 from its 2 subtasks in checkpoint \\d+$`,
        ),
      );

      const second = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 2 }).spec,
        params: {},
        buildParallelism: 2,
        checkpoint: { checkpointDir: ckpt, restoreFromDir: ckpt.replace(/$/, `/_jobs/${first.jobId}`) },
      });
      const restored = await client.waitForCompletion(second.jobId);
      assert.equal(restored.ok, true, restored.error);
      for (const name of ['windows', 'totals'])
        assert.deepEqual(sortBy(restored.collected[name]!), sortBy(expected.collected[name]!), name);
      const record = JSON.parse(await readFile(join(ckpt, '_jobs', second.jobId, 'RESTORED'), 'utf8')) as {
        checkpointId: number;
        firstId: number;
      };
      const restoredFrom = Number(markers[0]!.slice('COMPLETED-'.length));
      assert.equal(record.checkpointId, restoredFrom);
      assert.equal(record.firstId, restoredFrom + 1);
    } finally {
      await h.close();
    }
  });
});

test('exactly once: a keyed window job with the transactional file sink, cancelled mid-stream and restored, writes the uninterrupted output', async () => {
  const h = await ClusterHarness.start({ workers: 2, slots: 2 });
  try {
    const ckpt = join(h.dir, 'ckpt');
    const { loaded, expected } = await sinkJobAndOutput(h);
    const out = join(h.dir, 'out');
    const client = await h.client();
    const params = { out, rate: '8000' };
    const first = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
      params,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, intervalMs: 150 },
    });
    let done = 0;
    for (let i = 0; i < 400 && done < 2; i++) {
      await sleep(25);
      done = (await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${first.jobId}/checkpoints`)).body.checkpoints
        .length;
    }
    assert.ok(done >= 2, 'checkpoints completed while it ran');
    await client.cancel(first.jobId);
    assert.equal((await client.waitForCompletion(first.jobId)).state, 'CANCELED');
    const partial = await visibleLines(out);
    assert.ok(
      partial.length > 0 && partial.length < expected.length,
      `committed before the stop: ${partial.length} of ${expected.length}`,
    );
    const restoreParams = { out };
    const second = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params: restoreParams }).spec,
      params: restoreParams,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, restoreFromDir: join(ckpt, '_jobs', first.jobId) },
    });
    assert.equal((await client.waitForCompletion(second.jobId)).ok, true);
    assert.deepEqual(await visibleLines(out), expected, 'every window result exactly once');
    assert.deepEqual(
      (await readdir(out)).filter((n) => n.startsWith('.')),
      [],
      'no hidden leftovers',
    );
  } finally {
    await h.close();
  }
});

test('clink savepoint --cancel: a savepoint taken at parallelism 2 restores at 2, 1, 3 and 8, each exactly once', async () => {
  const { runCli } = await import('../harness/cli.js');
  const h = await ClusterHarness.start({ workers: 2, slots: 4 });
  try {
    const { loaded, expected } = await sinkJobAndOutput(h);
    const out = join(h.dir, 'out');
    const client = await h.client();
    // Slow enough that the job is still running when the savepoint CLI, a new process, gets to it on a loaded machine.
    const params = { out, rate: '2000' };
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
      params,
      buildParallelism: 2,
    });
    await h.waitForJob(jobId, ['RUNNING']);
    await sleep(600);
    const sp = join(h.dir, 'savepoint');
    const r = await runCli(
      ['savepoint', jobId, `--coordinator=127.0.0.1:${h.controlPort}`, `--dir=${sp}`, '--cancel'],
      h.dir,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), sp);
    assert.equal((await client.waitForCompletion(jobId)).state, 'CANCELED');
    assert.ok((await readdir(sp)).some((n) => /^COMPLETED-\d+$/.test(n)));
    // Each restore writes into a copy of what the first run left (committed parts, and the pending parts
    // the savepoint's commits name), so each must come out exactly the uninterrupted output.
    for (const parallelism of [2, 1, 3, 8]) {
      const into = join(h.dir, `out-${parallelism}`);
      await cp(out, into, { recursive: true });
      const p = { out: into };
      const again = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism, params: p }).spec,
        params: p,
        buildParallelism: parallelism,
        checkpoint: { restoreFromDir: sp },
      });
      const done = await client.waitForCompletion(again.jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual(await visibleLines(into), expected, `every window result exactly once at ${parallelism}`);
      assert.deepEqual(
        (await readdir(into)).filter((n) => n.startsWith('.')),
        [],
        `no hidden leftovers at ${parallelism}`,
      );
    }
  } finally {
    await h.close();
  }
});

test('a bounded job with a checkpoint directory ends with a final checkpoint, through which its sinks commit the tail', async () => {
  const h = await ClusterHarness.start({ workers: 2, slots: 2 });
  try {
    const { loaded, expected } = await sinkJobAndOutput(h);
    const out = join(h.dir, 'out');
    const ckpt = join(h.dir, 'ckpt');
    const client = await h.client();
    const params = { out };
    // No periodic checkpoints: all the output is the tail, and only the final checkpoint commits it.
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
      params,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, intervalMs: 0 },
    });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.ok, true, done.error);
    const { checkpoints } = (
      await h.http<{ checkpoints: { checkpointId: number; kind: string; stateBytes: number }[] }>(
        `/api/v1/jobs/${jobId}/checkpoints`,
      )
    ).body;
    assert.deepEqual(
      checkpoints.map((c) => c.kind),
      ['final'],
    );
    const markers = (await readdir(join(ckpt, '_jobs', jobId))).filter((n) => n.startsWith('COMPLETED-'));
    assert.deepEqual(markers, [`COMPLETED-${checkpoints[0]!.checkpointId}`]);
    assert.deepEqual(await visibleLines(out), expected, 'every window result, exactly once');
    // Its sinks confirmed the final checkpoint's commits: recorded on disk and shown by the API.
    const finalId = checkpoints[0]!.checkpointId;
    const marker = JSON.parse(await readFile(join(ckpt, '_jobs', jobId, `COMPLETED-${finalId}`), 'utf8')) as {
      committers?: string[];
    };
    assert.ok(
      (marker.committers ?? []).length >= 2,
      `the sink subtasks owed the commit: ${JSON.stringify(marker.committers)}`,
    );
    await waitFor(
      'the COMMITTED record',
      async () =>
        JSON.parse(await readFile(join(ckpt, '_jobs', jobId, 'COMMITTED'), 'utf8').catch(() => '{}')).checkpointId ===
        finalId,
    );
    assert.deepEqual((await h.http<{ commits: unknown }>(`/api/v1/jobs/${jobId}`)).body.commits, {
      confirmedThrough: finalId,
      owed: [],
    });
    assert.deepEqual(
      (await readdir(out)).filter((n) => n.startsWith('.')),
      [],
      'no hidden leftovers',
    );
    await h.waitForLog(
      h.coordinator,
      new RegExp(`^checkpoint ${checkpoints[0]!.checkpointId} completed for job ${jobId} in \\d+ ms`),
    );

    // With periodic checkpoints too, the final one comes last and numbers above them.
    const out2 = join(h.dir, 'out2');
    const params2 = { out: out2, rate: '8000' };
    const second = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params: params2 }).spec,
      params: params2,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, intervalMs: 200 },
    });
    assert.equal((await client.waitForCompletion(second.jobId)).ok, true);
    const kinds = (
      await h.http<{ checkpoints: { checkpointId: number; kind: string }[] }>(
        `/api/v1/jobs/${second.jobId}/checkpoints`,
      )
    ).body.checkpoints;
    assert.ok(kinds.length >= 2, `periodic checkpoints ran: ${JSON.stringify(kinds)}`);
    assert.equal(kinds.at(-1)!.kind, 'final');
    assert.ok(kinds.slice(0, -1).every((c) => c.kind === 'periodic' && c.checkpointId < kinds.at(-1)!.checkpointId));
    assert.deepEqual(await visibleLines(out2), expected);
  } finally {
    await h.close();
  }
});

test('a final checkpoint that fails (state that cannot be encoded) fails the job, naming why, and commits nothing', async () => {
  const h = await ClusterHarness.start({ workers: 1, slots: 2 });
  try {
    const loaded = await loadJobModule(resolve(import.meta.dirname, '../fixtures/jobs/ckpt-unencodable.ts'), {
      cacheDir: join(h.dir, 'c'),
    });
    const out = join(h.dir, 'out');
    const client = await h.client();
    const params = { out };
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
      params,
      buildParallelism: 1,
      checkpoint: { checkpointDir: join(h.dir, 'ckpt') },
    });
    const done = await client.waitForCompletion(jobId);
    assert.equal(done.state, 'FAILED');
    assert.match(
      done.error ?? '',
      /its final checkpoint failed: subtask .* could not snapshot: state 'last' of operator .* cannot be snapshotted: Unknown type: symbol/,
    );
    assert.deepEqual(await visibleLines(out).catch(() => []), [], 'nothing was committed');
  } finally {
    await h.close();
  }
});

test('--checkpoints-retained 3 with a separate state backend: three markers and their state are kept, and the oldest of them restores', async () => {
  const h = await ClusterHarness.start({ workers: 2, slots: 3 });
  try {
    const loaded = await loadJobModule(JOB, { cacheDir: join(h.dir, 'c') });
    const expected = await runJob(loaded.job, { parallelism: 2 });
    const ckpt = join(h.dir, 'ckpt');
    const state = join(h.dir, 'state');
    const client = await h.client();
    const params = { rate: '6000' };
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
      params,
      buildParallelism: 2,
      checkpoint: { checkpointDir: ckpt, intervalMs: 100, checkpointsRetained: 3, stateBackendUri: `file://${state}` },
    });
    let completed = 0;
    for (let i = 0; i < 400 && completed < 5; i++) {
      await sleep(25);
      completed = (await h.http<{ checkpoints: unknown[] }>(`/api/v1/jobs/${jobId}/checkpoints`)).body.checkpoints
        .length;
    }
    assert.ok(completed >= 5, `five checkpoints completed while it ran (${completed})`);
    await client.cancel(jobId);
    assert.equal((await client.waitForCompletion(jobId)).state, 'CANCELED');
    const ids = (await readdir(join(ckpt, '_jobs', jobId)))
      .map((n) => /^COMPLETED-(\d+)$/.exec(n)?.[1])
      .filter((x) => x !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    assert.equal(ids.length, 3, `retained: ${ids.join(', ')}`);
    assert.ok(
      !(await readdir(join(ckpt, '_jobs', jobId))).some((n) => n.startsWith('chk-')),
      'no state beside the markers',
    );
    // Older state goes after its marker, asynchronously: allow the last deletion a moment to finish.
    let stateDirs: string[] = [];
    for (let i = 0; i < 100; i++) {
      stateDirs = (await readdir(join(state, '_jobs', jobId))).filter((n) => n.startsWith('chk-')).sort();
      if (!stateDirs.some((n) => Number(n.slice(4)) < ids[0]!)) break;
      await sleep(50);
    }
    for (const id of ids) assert.ok(stateDirs.includes(`chk-${id}`), `state of checkpoint ${id} kept`);
    assert.ok(
      !stateDirs.some((n) => Number(n.slice(4)) < ids[0]!),
      `no state older than the retained: ${stateDirs.join(', ')}`,
    );

    const again = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2 }).spec,
      params: {},
      buildParallelism: 2,
      checkpoint: { restoreFromDir: join(ckpt, '_jobs', jobId), restoreFromCheckpointId: ids[0]! },
    });
    const restored = await client.waitForCompletion(again.jobId);
    assert.equal(restored.ok, true, restored.error);
    for (const name of ['windows', 'totals'])
      assert.deepEqual(sortBy(restored.collected[name]!), sortBy(expected.collected[name]!), name);
  } finally {
    await h.close();
  }
});
