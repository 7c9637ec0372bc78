import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { compileJobModule, localSdk, localSdkManifest, loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';
import { ClusterClient } from '../../src/client/index.js';
import { Coordinator } from '../../src/coordinator/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { Worker } from '../../src/worker/index.js';
import { tmpdir } from 'node:os';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/jobs');
const job = (name: string): string => join(FIXTURES, `${name}.ts`);

describe('job modules travel by reference', () => {
  test('a second submit uploads no module bytes; a second deploy to the session ships a reference; a restarted worker gets the bytes again', async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2 });
    try {
      const first = await h.submit(job('trivial'));
      assert.equal((await first.client.waitForCompletion(first.jobId)).ok, true);
      assert.equal(first.uploadedBytes, first.moduleBytes, 'the first submit uploads the module once');
      assert.equal(await h.metric('clink_coordinator_submit_plugin_bytes_received_total'), first.moduleBytes);
      assert.equal(await h.metric('clink_coordinator_plugin_bytes_shipped_total'), first.moduleBytes);

      const second = await h.submit(job('trivial'));
      assert.equal((await second.client.waitForCompletion(second.jobId)).ok, true);
      assert.equal(second.uploadedBytes, 0, 'the second submit uploads nothing');
      assert.equal(await h.metric('clink_coordinator_submit_plugin_bytes_received_total'), first.moduleBytes);
      assert.equal(await h.metric('clink_coordinator_submit_plugin_cache_hits_total'), 1);
      assert.equal(
        await h.metric('clink_coordinator_plugin_ships_deduped_total'),
        1,
        'the second deploy is a reference',
      );
      assert.equal(await h.metric('clink_coordinator_plugin_bytes_shipped_total'), first.moduleBytes);

      // A restarted worker (a new session) starts with nothing: it gets the full bytes again.
      const w1 = h.worker('w1');
      w1.child.kill('SIGTERM');
      await w1.exited;
      await h.waitForLog(h.coordinator, /^worker retired: w1 \(shutdown\)$/);
      await h.addWorker([], 'w1');
      await h.waitForWorkers(1);
      const third = await h.submit(job('trivial'));
      assert.equal((await third.client.waitForCompletion(third.jobId)).ok, true);
      assert.equal(await h.metric('clink_coordinator_plugin_bytes_shipped_total'), 2 * first.moduleBytes);
      assert.equal(await h.metric('clink_coordinator_plugin_ships_deduped_total'), 1);
    } finally {
      await h.close();
    }
  });

  test('a worker that cannot resolve a reference fails the deploy loudly', async () => {
    // In-process, so the worker's module store can be one that forgets a module once it has been used:
    // the coordinator's next Deploy to the session refers to a module the worker no longer holds.
    const { log } = memoryLogger('error');
    const coordinator = await Coordinator.start({ port: 0 }, { log, metrics: new ClinkMetrics() });
    const forgetful = new (class extends Map<string, { bytes: Uint8Array; sourceMap: Uint8Array }> {
      override get(sha256: string): { bytes: Uint8Array; sourceMap: Uint8Array } | undefined {
        const held = super.get(sha256);
        this.delete(sha256);
        return held;
      }
    })();
    const worker = await Worker.start(
      {
        id: 'w1',
        coordinatorHost: '127.0.0.1',
        coordinatorPort: coordinator.port,
        slots: 2,
        dataHost: '127.0.0.1',
        heartbeatIntervalMs: 500,
        peerUpdateTimeoutMs: 30_000,
        batchSize: 1_000,
        batchLingerMs: 0,
        taskIsolation: 'none',
      },
      { log, metrics: new ClinkMetrics(), moduleStore: forgetful },
    );
    const client = await ClusterClient.connect('127.0.0.1', coordinator.port);
    const cacheDir = await mkdtemp(join(tmpdir(), 'clink-forgetful-'));
    try {
      const loaded = await loadJobModule(job('trivial'), { cacheDir });
      const submit = () =>
        client.submit({
          module: loaded,
          spec: buildJob(loaded.job, { parallelism: 1 }).spec,
          params: {},
          buildParallelism: 1,
        });
      const first = await client.waitForCompletion((await submit()).jobId);
      assert.equal(first.ok, true, first.error);
      const outcome = await client.waitForCompletion((await submit()).jobId);
      assert.equal(outcome.state, 'FAILED');
      assert.match(
        outcome.error,
        /refers to job module [0-9a-f]{64}, which worker w1 does not hold; refusing to run without it/,
      );
    } finally {
      client.close();
      await worker.close();
      await coordinator.stop();
      await rm(cacheDir, { recursive: true, force: true });
    }
  });

  test('two versions of one job run side by side, each with its own module', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 2 });
    try {
      const versions = ['v1', 'v2'];
      const files = await Promise.all(
        versions.map(async (v) => {
          const f = join(h.dir, `versioned-${v}.ts`);
          await writeFile(
            f,
            `import { defineJob } from 'clink';\nexport default defineJob({ name: 'versioned', version: '${v}' }, (env) => {\n  env.fromSource('datagen', { count: 100, rowsPerSecond: 25 }).map(() => '${v}').collect();\n});\n`,
          );
          return f;
        }),
      );
      const runs = await Promise.all(files.map((f) => h.submit(f)));
      // both are running at the same moment (each runs 4 s: a second job's thread may take a while to start under load)
      const deadline = Date.now() + 10_000;
      let both = false;
      while (!both && Date.now() < deadline) {
        const states = await Promise.all(runs.map((r) => h.http<{ state: string }>(`/api/v1/jobs/${r.jobId}`)));
        both = states.every((s) => s.body.state === 'RUNNING');
        await sleep(20);
      }
      assert.ok(both, 'the two versions ran at once');
      const outcomes = await Promise.all(runs.map((r) => r.client.waitForCompletion(r.jobId)));
      outcomes.forEach((o, i) => assert.deepEqual(new Set(o.collected.default), new Set([versions[i]])));
      assert.equal(await h.metric('clink_coordinator_plugin_ships_deduped_total'), 0, 'two modules, two hashes');
    } finally {
      await h.close();
    }
  });
});

describe('the SDK gate', () => {
  test('a module advertising another SDK is refused at submit, before a byte ships, naming the differing file', async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2 });
    try {
      const loaded = await loadJobModule(job('trivial'), { cacheDir: join(h.dir, 'c') });
      const client = await h.client();
      const manifest = { ...localSdkManifest(), 'sdk/stream.d.ts': 'f'.repeat(64) };
      await assert.rejects(
        client.submit({
          module: loaded,
          spec: buildJob(loaded.job).spec,
          params: {},
          sdkAdvert: { fingerprint: 'e'.repeat(64), manifest },
        }),
        /submit refused: submit of trivial: the job module was built against an incompatible SDK .*; the SDK declarations differ in sdk\/stream\.d\.ts; rebuild the module/,
      );
      assert.equal(await h.metric('clink_coordinator_submit_plugin_bytes_received_total'), 0);
      assert.equal(await h.metric('clink_coordinator_plugin_bytes_shipped_total'), 0);
    } finally {
      await h.close();
    }
  });

  test('the worker’s deploy-time check is the authority: a module whose own record disagrees is refused, fatally', async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2 });
    try {
      const compiled = await compileJobModule(job('trivial'));
      const loaded = await loadJobModule(job('trivial'), { cacheDir: join(h.dir, 'c') });
      // The same code claiming, in its first line, another SDK (and honest about its hash).
      const text = Buffer.from(compiled.code)
        .toString('utf8')
        .replace(/fingerprint=[0-9a-f]{64}/, `fingerprint=${'d'.repeat(64)}`);
      const code = Buffer.from(text);
      const { createHash } = await import('node:crypto');
      const tampered = { ...compiled, code, sha256: createHash('sha256').update(code).digest('hex') };
      const client = await h.client();
      const { jobId } = await client.submit({
        module: tampered,
        spec: buildJob(loaded.job).spec,
        params: {},
        sdkAdvert: { fingerprint: localSdk().fingerprint, manifest: localSdkManifest() },
      });
      const outcome = await client.waitForCompletion(jobId);
      assert.equal(outcome.state, 'FAILED');
      assert.match(
        outcome.error,
        /job module of trivial: the job module was built against an incompatible SDK \(fingerprint dddddddddddd/,
      );
    } finally {
      await h.close();
    }
  });
});
