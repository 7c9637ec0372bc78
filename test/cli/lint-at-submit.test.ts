// The lint where a cluster meets it: clink node logs its warnings at start and serves them at
// /api/v1/config; clink submit accepts a lint-clean command line and refuses a lint error, before
// anything ships, with the message clink lint gives.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../harness/cli.js';
import { ClusterHarness } from '../harness/cluster.js';
import { LINT_JOBS } from '../harness/lint-jobs.js';

const clink = runCli;

describe('the lint at submit and at node start', () => {
  let h: ClusterHarness;
  before(async () => {
    h = await ClusterHarness.start({ workers: 1, slots: 4, coordinatorArgs: ['--outbound-stall-timeout-ms=1500'] });
  });
  after(async () => {
    await h?.close();
  });

  test('clink node logs each warning at start; GET /api/v1/config reports them', async () => {
    await h.waitForLog(
      h.coordinator,
      /^configuration: --outbound-stall-timeout-ms 1500 is at or below --heartbeat-timeout-ms 2000: /,
    );
    const config = await h.http<{ outboundStallTimeoutMs: number; warnings: { check: string; message: string }[] }>(
      '/api/v1/config',
    );
    assert.equal(config.body.outboundStallTimeoutMs, 1500);
    assert.deepEqual(
      config.body.warnings.map((w) => w.check),
      ['stall-within-heartbeat'],
    );
  });

  test('a lint-clean command line is accepted by submit; a lint error is refused by submit before anything ships, with the same message', async () => {
    const target = ['--coordinator', `127.0.0.1:${h.controlPort}`];
    const flags = ['-p', '2', '--checkpoint-dir', 'ck', '--checkpoint-interval-ms', '500'];
    await writeFile(join(h.dir, 'clean.ts'), LINT_JOBS['clean.ts']!);
    const lint = await clink(['lint', 'clean.ts', ...flags, ...target], h.dir);
    assert.equal(lint.code, 0, lint.stdout);
    const accepted = await clink(
      ['submit', 'clean.ts', ...flags, ...target, '--wait', '--no-progress', '--output', 'json'],
      h.dir,
    );
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.equal((JSON.parse(accepted.stdout) as { state: string }).state, 'FINISHED');
    for (const [job, extra] of [
      ['clean.ts', ['--restore-from-checkpoint-id', '3']],
      ['unknown.ts', []],
      ['clocked.ts', []],
    ] as const) {
      await writeFile(join(h.dir, job), LINT_JOBS[job]!);
      const linted = await clink(['lint', job, ...flags, ...extra, ...target], h.dir);
      assert.equal(linted.code, 1, linted.stdout);
      const line = linted.stdout.split('\n')[0]!.replace(/ \[[a-z-]+\]$/, '');
      const refused = await clink(['submit', job, ...flags, ...extra, ...target], h.dir);
      assert.equal(refused.code, 1, refused.stderr);
      // The warnings come first, as lint lists them; then the refusal.
      assert.equal(refused.stderr.trimEnd().split('\n').at(-1), line, job);
    }
    const jobs = (await (await h.client()).listJobs(true)).length;
    assert.equal(jobs, 1, 'only the clean job reached the coordinator');
  });
});
