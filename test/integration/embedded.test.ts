// The embedded cluster of `clink run` supervises its worker processes: one that dies is started again.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedCluster } from '../../src/embedded/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { buildJob } from '../../src/sdk/index.js';

const ROOT = resolve(import.meta.dirname, '../..');

test('a local worker process killed -9 is started again under its id, and jobs run on it', async () => {
  const { log, lines } = memoryLogger('warn');
  const dir = await mkdtemp(join(tmpdir(), 'clink-embedded-'));
  const cluster = await EmbeddedCluster.start({
    workers: 2,
    slotsPerWorker: 2,
    log,
    cliCommand: { execPath: process.execPath, args: ['--import', 'tsx', join(ROOT, 'src/cli/bin.ts')] },
  });
  try {
    const before = cluster.coordinator.workers().find((w) => w.workerId === 'local-0')!;
    process.kill(cluster.workerPids()[0]!, 'SIGKILL');
    for (let i = 0; i < 600; i++) {
      const w = cluster.coordinator.workers().find((x) => x.workerId === 'local-0');
      if (w && w.session > before.session) break;
      await sleep(25);
    }
    const after = cluster.coordinator.workers().find((x) => x.workerId === 'local-0');
    assert.ok(after && after.session > before.session, 'local-0 registered again');
    assert.equal(cluster.restarts, 1);
    assert.ok(
      lines().some((l) => /^local worker local-0 exited \(SIGKILL\); starting it again in \d+ ms$/.test(String(l.msg))),
    );
    const loaded = await loadJobModule(join(ROOT, 'test/fixtures/jobs/trivial.ts'), { cacheDir: dir });
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: buildJob(loaded.job, { parallelism: 2 }).spec,
      params: {},
      buildParallelism: 2,
    });
    assert.equal((await client.waitForCompletion(jobId)).ok, true);
  } finally {
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('--task-isolation none runs the job on the session loop with the same results as a job thread', async () => {
  const { log } = memoryLogger('warn');
  const dir = await mkdtemp(join(tmpdir(), 'clink-embedded-'));
  const outcomes: Record<string, unknown[]>[] = [];
  try {
    const loaded = await loadJobModule(join(ROOT, 'test/fixtures/jobs/keyed-windows.ts'), { cacheDir: dir });
    const params = { count: '20000' };
    for (const taskIsolation of ['none', 'thread'] as const) {
      const cluster = await EmbeddedCluster.start({ workers: 0, slotsPerWorker: 8, log, taskIsolation });
      try {
        const client = await cluster.client();
        const { jobId } = await client.submit({
          module: loaded,
          spec: buildJob(loaded.job, { parallelism: 2, params }).spec,
          params,
          buildParallelism: 2,
        });
        const outcome = await client.waitForCompletion(jobId);
        assert.equal(outcome.ok, true, outcome.error);
        outcomes.push(outcome.collected);
      } finally {
        await cluster.stop();
      }
    }
    const sorted = (rows: unknown[] = []): string[] => rows.map((r) => JSON.stringify(r)).sort();
    for (const name of ['windows', 'totals']) {
      assert.ok(sorted(outcomes[0]![name]).length > 0, name);
      assert.deepEqual(sorted(outcomes[0]![name]), sorted(outcomes[1]![name]), name);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
