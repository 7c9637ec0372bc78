import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  defineJob,
  runJob,
  startJob,
  Windows,
  type Bid,
  type JobDefinition,
  type JobSnapshot,
  type NexmarkEvent,
  type TaskMetrics,
} from '../../src/index.js';
import { isFatal } from '../../src/errors.js';
import { loadJobModule } from '../../src/loader/index.js';
import { rowsRead, sortBy, waitFor } from '../helpers.js';
import { PAUSE, testingSource, type TestingSource } from '../harness/testing-source.js';

const FIXTURES = new URL('../fixtures/jobs/', import.meta.url);
const cacheDir = join(tmpdir(), `clink-ckpt-tests-${process.pid}`);
after(() => rm(cacheDir, { recursive: true, force: true }));

/**
 * The fixture's every output is emitted at the end of input (huge windows, end-of-input timers), so a
 * run stopped mid-stream has emitted nothing: the restored run's output must equal an uninterrupted
 * run's exactly. A record lost, or counted twice in state or in a source position, shows.
 */
async function fixture(name: string): Promise<JobDefinition> {
  return (await loadJobModule(fileURLToPath(new URL(`${name}.ts`, FIXTURES)), { cacheDir })).job;
}

/** The most records any task of a running job has taken in or put out. */
const recordsThrough = (exec: { metrics(): TaskMetrics[] }): number =>
  Math.max(0, ...exec.metrics().map((t) => Math.max(t.recordsIn, t.recordsOut)));

/** Wait until `n` records have gone through a task of `exec` (mid-stream, where its sources are rate-limited). */
const afterRecords = (exec: { metrics(): TaskMetrics[] }, n: number): Promise<void> =>
  waitFor(`${n} records through a task`, () => recordsThrough(exec) >= n);

/** Start `job`, checkpoint it once `records` have gone through a task, and stop it. */
async function checkpointThenStop(
  job: JobDefinition,
  parallelism: number,
  records: number,
  params: Record<string, string>,
): Promise<JobSnapshot> {
  const exec = startJob(job, { parallelism, params });
  await afterRecords(exec, records);
  const snapshot = await exec.triggerCheckpoint();
  exec.cancel('stopped by the test after its checkpoint');
  await exec.done.catch(() => undefined);
  return snapshot;
}

/** Bids per auction over 20 000 nexmark events, in one window over all time (every count comes at the end). */
function nexmarkCounts(name: string): JobDefinition {
  return defineJob({ name, version: '1' }, (env) => {
    env
      .fromSource<NexmarkEvent>('nexmark', {
        events: 20_000,
        eventsPerSecond: Number(env.params.rate ?? 1e9),
        rateLimited: env.params.rate !== undefined,
      })
      .filter((e): e is Bid => e.kind === 'bid')
      .assignTimestamps((b) => b.dateTime)
      .keyBy((b) => b.auction)
      .window(Windows.tumbling(1e12))
      .count()
      .collect('counts');
  });
}

describe('checkpoints and restore (local runtime)', () => {
  test('a keyed window job stopped mid-stream and restored from its checkpoint gives exactly the uninterrupted output', async () => {
    const job = await fixture('ckpt-keyed');
    const expected = await runJob(job, { parallelism: 2 });
    const snapshot = await checkpointThenStop(job, 2, 2_400, { rate: '60000' });
    const sourceRows = Object.entries(snapshot.subtasks)
      .filter(([k]) => k.startsWith('_inline_source'))
      .reduce((n, [, s]) => n + rowsRead(s.source), 0);
    assert.ok(
      sourceRows > 0 && sourceRows < 30_000 + 2,
      `the checkpoint is mid-stream (source positions sum to ${sourceRows})`,
    );
    const restored = await runJob(job, { parallelism: 2, restore: snapshot });
    for (const name of ['windows', 'totals']) {
      assert.ok(expected.collected[name]!.length > 0);
      assert.deepEqual(sortBy(restored.collected[name]!), sortBy(expected.collected[name]!), name);
    }
  });

  test('a nexmark source and a pre-aggregated window stopped mid-stream and restored give exactly the uninterrupted output', async () => {
    // One window over all time: every count comes at the end, so the restored run must emit them all.
    const job = nexmarkCounts('ckpt-nexmark');
    const expected = await runJob(job, { parallelism: 2 });
    const snapshot = await checkpointThenStop(job, 2, 3_600, { rate: '60000' });
    const next = Object.entries(snapshot.subtasks)
      .filter(([k]) => k.startsWith('_inline_source'))
      .map(([, s]) => rowsRead(s.source));
    assert.ok(
      next.every((n) => n > 0 && n < 10_000),
      `the checkpoint is mid-stream (events read ${next.join(', ')})`,
    );
    const restored = await runJob(job, { parallelism: 2, restore: snapshot, params: { rate: '60000' } });
    assert.equal(
      (expected.collected.counts as { count: number }[]).reduce((n, c) => n + c.count, 0),
      18_400,
    );
    assert.deepEqual(sortBy(restored.collected.counts!), sortBy(expected.collected.counts!));
  });

  for (const kind of ['tumbling', 'session'] as const)
    test(`${kind} windows kept for their allowed lateness do not fire again after a restore`, async () => {
      // In-order timestamps: each window fires once, at the watermark, and is kept an hour for late records.
      // Sessions: one a second per key (the key is the second), closed by a 1 ms gap.
      const job = defineJob({ name: 'ckpt-lateness', version: '1' }, (env) => {
        env
          .fromSource<{ ts: number }>('datagen', {
            count: 20_000,
            ...(env.params.rate ? { rowsPerSecond: Number(env.params.rate) } : {}),
            fields: { ts: { kind: 'timestamp', startMs: 0, stepMs: 1 } },
          })
          .assignTimestamps((r) => r.ts)
          .keyBy((r) => (kind === 'session' ? Math.floor(r.ts / 1_000) : 0))
          .window(kind === 'session' ? Windows.session(1) : Windows.tumbling(1_000), { allowedLatenessMs: 3_600_000 })
          .count()
          .map((c) => c.start)
          .collect('fired');
      });
      const expected = (await runJob(job)).collected.fired as number[];
      assert.deepEqual(
        expected,
        Array.from({ length: 20 }, (_, i) => i * 1_000),
      );
      const snapshot = await checkpointThenStop(job, 1, 3_000, { rate: '40000' });
      const row = rowsRead(Object.entries(snapshot.subtasks).find(([k]) => k.startsWith('_inline_source'))![1].source);
      assert.ok(
        row > 2_000 && row < 20_000,
        `the checkpoint is mid-stream, after a window fired (source at row ${row})`,
      );
      const restored = (await runJob(job, { restore: snapshot })).collected.fired as number[];
      // The collected results are checkpointed too: each window must be there once. Had the restore not
      // known which kept windows had fired, they would all fire again at its first watermark.
      assert.deepEqual(restored, expected, 'each window fired once');
    });

  test('barriers align across a union and a connect', async () => {
    const ids = Array.from({ length: 3_000 }, (_, i) => i);
    // The checkpoint is taken where the slow input pauses, half way through it.
    const paused = testingSource<number>('slow', [...ids.slice(0, 1_500), PAUSE, ...ids.slice(1_500)]);
    const job = (slowInput: TestingSource<number>) =>
      defineJob({ name: 'ckpt-two-inputs', version: '1' }, (env) => {
        const fast = env.fromSequence(1, 6_000);
        const slow = env
          .fromSource(slowInput.connector)
          .map((id) => id + 100_000)
          .setParallelism(2);
        fast
          .union(slow)
          .keyBy((x) => x % 5)
          .process<string>({
            processElement(x, ctx) {
              const s = ctx.state.value<number>('sum');
              s.update((s.value() ?? 0) + x);
              ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
            },
            onTimer(_t, ctx, out) {
              out.collect(`u${ctx.key}:${ctx.state.value<number>('sum').value()}`);
            },
          })
          .collect('union');
        fast
          .connect(slow)
          .keyBy(
            (x) => x % 3,
            (y) => y % 3,
          )
          .process<string>({
            processElement1(x, ctx) {
              const s = ctx.state.value<number>('a');
              s.update((s.value() ?? 0) + x);
              ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
            },
            processElement2(y, ctx) {
              const s = ctx.state.value<number>('b');
              s.update((s.value() ?? 0) + y);
              ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
            },
            onTimer(_t, ctx, out) {
              out.collect(
                `c${ctx.key}:${ctx.state.value<number>('a').value()}/${ctx.state.value<number>('b').value()}`,
              );
            },
          })
          .collect('connect');
      });
    const expected = await runJob(job(testingSource('slow', ids)), { parallelism: 2 });
    const exec = startJob(job(paused), { parallelism: 2 });
    await paused.paused();
    const snapshot = await exec.triggerCheckpoint();
    exec.cancel();
    paused.release();
    await exec.done.catch(() => undefined);
    assert.equal(
      Object.keys(snapshot.subtasks).length,
      exec.metrics().reduce((n, t) => n + t.parallelism, 0),
      'every subtask took part',
    );
    const atPause = Object.values(snapshot.subtasks).filter((sub) => sub.source === 1_500);
    assert.equal(atPause.length, 2, 'both subtasks of the slow input were checkpointed where it paused');
    const restored = await runJob(job(testingSource('slow', ids)), { parallelism: 2, restore: snapshot });
    assert.deepEqual(sortBy(restored.collected.union!), sortBy(expected.collected.union!));
    assert.deepEqual(sortBy(restored.collected.connect!), sortBy(expected.collected.connect!));
  });

  test('checkpoint ids never repeat across restores', async () => {
    const job = await fixture('ckpt-keyed');
    const first = await checkpointThenStop(job, 1, 600, { rate: '30000' });
    const exec = startJob(job, { parallelism: 1, restore: first, params: { rate: '30000' } });
    const second = await exec.triggerCheckpoint();
    exec.cancel();
    await exec.done.catch(() => undefined);
    assert.ok(second.checkpointId > first.checkpointId, `${second.checkpointId} after ${first.checkpointId}`);
  });

  test('a checkpoint taken at parallelism 2 restores at 1, 3 and 8 with exactly the uninterrupted output', async () => {
    const job = await fixture('ckpt-keyed');
    const expected = await runJob(job, { parallelism: 2 });
    const snapshot = await checkpointThenStop(job, 2, 2_400, { rate: '60000' });
    const read = Object.entries(snapshot.subtasks)
      .filter(([k]) => k.startsWith('_inline_source'))
      .reduce((n, [, s]) => n + rowsRead(s.source), 0);
    assert.ok(read > 0 && read < 30_000, `the checkpoint is mid-stream (${read} rows read)`);
    for (const parallelism of [1, 3, 8]) {
      const restored = await runJob(job, { parallelism, restore: snapshot });
      for (const name of ['windows', 'totals'])
        assert.deepEqual(
          sortBy(restored.collected[name]!),
          sortBy(expected.collected[name]!),
          `${name} at ${parallelism}`,
        );
    }
  });

  test('a nexmark job rescaled twice in a row (2 -> 3 -> 5) gives exactly the uninterrupted output', async () => {
    const job = nexmarkCounts('ckpt-nexmark-rescale');
    const expected = await runJob(job, { parallelism: 2 });
    const first = await checkpointThenStop(job, 2, 1_600, { rate: '40000' });
    const exec = startJob(job, { parallelism: 3, restore: first, params: { rate: '40000' } });
    await afterRecords(exec, 1_600);
    const second = await exec.triggerCheckpoint();
    exec.cancel();
    await exec.done.catch(() => undefined);
    assert.equal(Object.keys(second.subtasks).filter((k) => k.startsWith('_inline_source')).length, 3);
    const restored = await runJob(job, { parallelism: 5, restore: second });
    assert.deepEqual(sortBy(restored.collected.counts!), sortBy(expected.collected.counts!));
  });
});

test('a file source resumes at the line its checkpoint recorded', async () => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'clink-ckpt-file-'));
  try {
    for (let f = 0; f < 3; f++)
      await writeFile(
        join(dir, `in${f}.txt`),
        Array.from({ length: 4_000 }, (_, i) => `w${(i * 7 + f) % 23}`).join('\n') + '\n',
      );
    const job = defineJob({ name: 'ckpt-file', version: '1' }, (env) => {
      const words = env.fromSource<string>('file', { path: dir });
      words.print();
      words
        .keyBy((w) => w)
        .process<string>({
          processElement(_w, ctx) {
            const n = ctx.state.value<number>('n');
            n.update((n.value() ?? 0) + 1);
            ctx.timers.registerEventTime(Number.MAX_SAFE_INTEGER);
          },
          onTimer(_t, ctx, out) {
            out.collect(`${ctx.key}=${ctx.state.value<number>('n').value()}`);
          },
        })
        .collect();
    });
    const stdout = (): void => undefined;
    const expected = await runJob(job, { parallelism: 2, stdout });
    // The printing branch is held until the checkpoint is asked for: the sources stop on backpressure
    // mid-file (a queue holds 400 of 12 000 lines), so the barrier goes in mid-stream however fast the
    // machine reads, and a line position is what the restore resumes from.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const exec = startJob(job, { parallelism: 2, batchSize: 50, stdout: () => held });
    await afterRecords(exec, 1);
    const checkpointed = exec.triggerCheckpoint();
    release();
    const snapshot = await checkpointed;
    const positions = Object.values(snapshot.subtasks)
      .map((s) => s.source as { files: [string, number][] } | undefined)
      .filter((p) => p !== undefined);
    assert.ok(
      positions.some((p) => p.files.length > 0 && p.files[0]![1] > 0),
      `a source checkpointed mid-file: ${JSON.stringify(positions)}`,
    );
    exec.cancel();
    await exec.done.catch(() => undefined);
    const restored = await runJob(job, { parallelism: 2, restore: snapshot, stdout });
    assert.deepEqual(sortBy(restored.collected.default!), sortBy(expected.collected.default!));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe('the transactional file sink', () => {
  async function partsText(dir: string): Promise<string[]> {
    const { readdir, readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const names = (await readdir(dir)).filter((n) => /^part-\d+-\d+\.jsonl$/.test(n));
    return (await Promise.all(names.map((n) => readFile(join(dir, n), 'utf8'))))
      .flatMap((t) => t.split('\n').filter(Boolean))
      .sort();
  }

  test('a crash between pre-commit and commit is finished by the restore; nothing is written twice or lost', async () => {
    const { mkdtemp, rm, readdir } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const root = await mkdtemp(join(tmpdir(), 'clink-2pc-'));
    try {
      const sinkJob = await fixture('ckpt-file-sink');
      await runJob(sinkJob, { parallelism: 2, params: { out: join(root, 'expected') } });
      const expected = await partsText(join(root, 'expected'));
      assert.ok(expected.length > 20);
      const out = join(root, 'out');
      const exec = startJob(sinkJob, { parallelism: 2, params: { out, rate: '20000' } });
      await afterRecords(exec, 1_500);
      // The snapshot is taken and the parts prepared, but the commit never happens: the job "crashes".
      const snapshot = await exec.triggerCheckpoint({ commit: false });
      const atCheckpoint = recordsThrough(exec);
      await afterRecords(exec, atCheckpoint + 500);
      exec.cancel();
      await exec.done.catch(() => undefined);
      const hidden = (await readdir(out)).filter((n) => n.endsWith('.pending'));
      assert.ok(hidden.length > 0, 'prepared parts wait, hidden, for a commit');
      const visibleBefore = await partsText(out);
      assert.ok(visibleBefore.length < expected.length);
      await runJob(sinkJob, { parallelism: 2, restore: snapshot, params: { out } });
      assert.deepEqual(await partsText(out), expected, 'every window result exactly once');
      assert.deepEqual(
        (await readdir(out)).filter((n) => n.startsWith('.')),
        [],
        'no leftovers',
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
  test('a restore that fails is a failure like any other (the job restarts), not a fatal one as a failing open() is', async () => {
    const job = await fixture('ckpt-keyed');
    const snapshot = await checkpointThenStop(job, 1, 2_400, { rate: '60000' });
    // Every key group of every keyed table damaged: decoding any of them throws.
    let damaged = 0;
    for (const st of Object.values(snapshot.subtasks))
      for (const op of st.operators as ({ state?: { groups: Uint8Array[][] }[] } | undefined)[])
        for (const table of op?.state ?? [])
          for (const group of table.groups) {
            group[1] = new Uint8Array([0xc1, 0xff, 0, 0]);
            damaged++;
          }
    assert.ok(damaged > 0, 'the checkpoint holds keyed state');
    const failure = await runJob(job, { parallelism: 1, restore: snapshot }).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(failure instanceof Error, 'the restore failed');
    assert.equal(isFatal(failure), false, String(failure));
  });
});
