// POST /api/v1/jobs: a job file uploaded over HTTP to a real cluster runs to its end, and runs again by
// the hash the first submit answered; the query's settings are read as the CLI's flags are, a malformed
// one refused naming it; a build function that never returns costs a bounded thread, not the coordinator.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Coordinator, type JobDetail } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { ClusterHarness } from '../harness/cluster.js';

const fixture = (name: string): string => resolve(import.meta.dirname, '../fixtures/jobs', name);

async function upload(
  port: number,
  file: string,
  query = '',
  as = 'job.ts',
): Promise<{ status: number; body: Record<string, string> }> {
  const form = new FormData();
  form.append('module', new Blob([await readFile(file)]), as);
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/jobs${query}`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

describe('submitting over HTTP', () => {
  test('a job file uploaded runs to its end on the cluster with the query settings; the hash it answers submits it again without the bytes', async () => {
    const h = await ClusterHarness.start({ workers: 2, slots: 2, coordinatorArgs: ['--submit-wait-for-slots-ms=0'] });
    try {
      const first = await upload(
        h.httpPort,
        fixture('counted.ts'),
        '?parallelism=2&param=count=800&name=counted-over-http&checkpoint_interval_ms=0',
      );
      assert.equal(first.status, 201, JSON.stringify(first.body));
      assert.equal(first.body.name, 'counted-over-http');
      assert.match(first.body.moduleSha256!, /^[0-9a-f]{64}$/);
      const ended = async (jobId: string): Promise<JobDetail> => {
        for (;;) {
          const v = (await h.http<JobDetail>(`/api/v1/jobs/${jobId}`)).body;
          if (v.finishedAt !== undefined) return v;
          await sleep(50);
        }
      };
      const done = await ended(first.body.jobId!);
      assert.equal(done.state, 'FINISHED', done.error);
      assert.equal(done.parallelism, 2);
      assert.equal(done.sourceRecords, 800, 'the param reached the build function');

      const again = await h.http<Record<string, string>>('/api/v1/jobs?param=count=300', {
        method: 'POST',
        body: { moduleSha256: first.body.moduleSha256 },
      });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.body.moduleSha256, first.body.moduleSha256);
      assert.deepEqual((first.body as unknown as { warnings: unknown[] }).warnings, [], 'nothing for the lint to say');
      // The lint's warnings come back with an accepted submit.
      const ckpt = await mkdtemp(join(tmpdir(), 'clink-http-ckpt-'));
      const warned = await h.http<{ jobId: string; warnings: { check: string }[] }>(
        // Flink's key for a setting is read as its own name is (and, without an interval, warned of).
        `/api/v1/jobs?param=count=10&checkpoint_dir=${encodeURIComponent(ckpt)}&execution.checkpointing.min-pause=500ms`,
        { method: 'POST', body: { moduleSha256: first.body.moduleSha256 } },
      );
      assert.equal(warned.status, 201, warned.text);
      // (the fixture's stateful operators have no uid: under checkpoints, that is said too)
      assert.deepEqual(
        warned.body.warnings.map((w) => w.check),
        ['dir-without-interval', 'periodic-setting-without-interval', 'stateful-without-uid', 'stateful-without-uid'],
      );
      // Removed once the job has ended: a job still running writes into it (CI saw ENOTEMPTY).
      assert.equal((await ended(warned.body.jobId)).state, 'FINISHED');
      await rm(ckpt, { recursive: true, force: true });
      const second = await ended(again.body.jobId!);
      assert.equal(second.state, 'FINISHED', second.error);
      assert.equal(second.sourceRecords, 300);
    } finally {
      await h.close();
    }
  });

  test('refusals name what is wrong: a malformed or unknown query parameter, no module, an unknown hash, a file that does not compile, a build that is not deterministic, a build function that never returns', async () => {
    const { log } = memoryLogger();
    const metrics = new ClinkMetrics();
    const coordinator = await Coordinator.start({ port: 0 }, { log, metrics });
    const app = buildHttpApp({ role: 'coordinator', metrics, config: {}, coordinator, planTimeoutMs: 10_000 });
    const post = async (
      url: string,
      payload: { file?: string; as?: string; json?: unknown },
    ): Promise<{ status: number; code: string; message: string }> => {
      let res;
      if (payload.file !== undefined) {
        const form = new FormData();
        form.append('module', new Blob([await readFile(payload.file)]), payload.as ?? 'job.ts');
        const req = new Request('http://x', { method: 'POST', body: form });
        res = await app.inject({
          method: 'POST',
          url,
          headers: Object.fromEntries(req.headers),
          payload: Buffer.from(await req.arrayBuffer()),
        });
      } else res = await app.inject({ method: 'POST', url, payload: payload.json as object });
      const body = res.json<{ code: string; message: string }>();
      return { status: res.statusCode, code: body.code, message: body.message };
    };
    let scratch: string | undefined;
    try {
      const badInterval = await post('/api/v1/jobs?checkpoint_interval_ms=soon', { file: fixture('trivial.ts') });
      assert.deepEqual(badInterval, {
        status: 400,
        code: 'CLINK_ERR_INVALID_ARGUMENT',
        message: "query parameter checkpoint_interval_ms: expected a whole number >= 0, got 'soon'",
      });
      const badParallelism = await post('/api/v1/jobs?parallelism=0', { file: fixture('trivial.ts') });
      assert.equal(badParallelism.message, "query parameter parallelism: expected a whole number >= 1, got '0'");
      const badAlignment = await post('/api/v1/jobs?alignment=sideways', { file: fixture('trivial.ts') });
      assert.equal(
        badAlignment.message,
        "query parameter alignment: expected one of aligned, unaligned, adaptive, got 'sideways'",
      );
      const badBounds = await post('/api/v1/jobs?autoscale=8..2', { file: fixture('trivial.ts') });
      assert.equal(badBounds.message, 'query parameter autoscale: expected 1 <= min <= max, got 8..2');
      const noCheckpoints = await post('/api/v1/jobs?autoscale=1..4', { file: fixture('trivial.ts') });
      assert.deepEqual(
        [noCheckpoints.status, noCheckpoints.message],
        [
          400,
          "submit refused: --autoscale 1..4 without --checkpoint-dir: a rescale restores from a checkpoint of the job's own; give --checkpoint-dir",
        ],
      );
      const unknown = await post('/api/v1/jobs?paralelism=2', { file: fixture('trivial.ts') });
      assert.match(
        unknown.message,
        /^unknown query parameter 'paralelism'; a submit takes parallelism, name, guarantee, autoscale, checkpoint_dir/,
      );
      const nothing = await post('/api/v1/jobs', { json: {} });
      assert.equal(nothing.status, 400);
      assert.match(nothing.message, /multipart upload \(field "module"\)/);
      const missing = await post('/api/v1/jobs', { json: { moduleSha256: 'a'.repeat(64) } });
      assert.deepEqual([missing.status, missing.code], [404, 'CLINK_ERR_MODULE_MISSING']);
      const notAJob = await post('/api/v1/jobs', { file: fixture('trivial.ts'), as: 'notes.txt' });
      assert.match(notAJob.message, /notes\.txt is not a job file: upload a \.ts or \.js file/);
      scratch = await mkdtemp(join(tmpdir(), 'clink-broken-'));
      const broken = join(scratch, 'broken.ts');
      await writeFile(
        broken,
        "import { defineJob } from 'clink';\nexport default defineJob({ name: 'b', version: '1' }, (env) => { env.fromElements([1]).map((x) => x * ).collect(); });\n",
      );
      const syntax = await post('/api/v1/jobs', { file: broken, as: 'broken.ts' });
      assert.equal(syntax.status, 400);
      assert.equal(syntax.code, 'CLINK_ERR_JOB_LOAD');
      assert.match(syntax.message, /broken\.ts:2:\d+: Unexpected "\)"/);
      const clocked = join(scratch, 'clocked.ts');
      await writeFile(
        clocked,
        "import { defineJob } from 'clink';\nlet builds = 0;\nexport default defineJob({ name: 'c', version: '1' }, (env) => { env.fromSequence(1, 10 + builds++).print(); });\n",
      );
      const unsteady = await post('/api/v1/jobs', { file: clocked, as: 'clocked.ts' });
      assert.deepEqual([unsteady.status, unsteady.code], [400, 'CLINK_ERR_JOB_DEFINITION']);
      assert.match(
        unsteady.message,
        /the job's build function is not deterministic: two builds gave different graphs \(at operators\[0\]\.options\.to: 10 vs 11\)/,
      );
      // 10 s: long enough for a real module to plan on a busy machine, the endless one is cut at it.
      const endless = await post('/api/v1/jobs', { file: fixture('endless-build.ts'), as: 'endless.ts' });
      assert.equal(endless.status, 400);
      assert.equal(
        endless.message,
        'submit refused: job module endless.ts: its build function did not return within 10000 ms (a loop that never ends?)',
      );
      // The coordinator's event loop ran all along: it still answers.
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode, 200);
      // A job that plans but finds no slots (no workers here) is refused with its reason.
      const noSlots = await post('/api/v1/jobs', { file: fixture('trivial.ts') });
      assert.deepEqual([noSlots.status, noSlots.code], [409, 'CLINK_ERR_NOT_ENOUGH_SLOTS']);
    } finally {
      await app.close();
      await coordinator.stop();
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  });
});
