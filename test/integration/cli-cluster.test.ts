import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { progressFrames, runCli, runCliOnTerminal } from '../harness/cli.js';
import { ClusterHarness } from '../harness/cluster.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/jobs');

const clink = runCli;

describe('clink submit, jobs and cancel against a running cluster', () => {
  let h: ClusterHarness;
  let at: string;
  before(async () => {
    h = await ClusterHarness.start({ workers: 2, slots: 4, coordinatorArgs: ['--submit-wait-for-slots-ms=0'] });
    at = `--coordinator=127.0.0.1:${h.controlPort}`;
  });
  after(async () => {
    await h?.close();
  });

  test('submit --wait prints the job id and its results; jobs lists it', async () => {
    const r = await clink(['submit', join(FIXTURES, 'trivial.ts'), at, '--wait', '--name', 'doubling'], h.dir);
    assert.equal(r.code, 0, r.stderr);
    const [jobId] = r.stdout.trim().split('\n');
    assert.match(jobId!, /^[0-9a-f]{8}$/);
    assert.match(r.stdout, /default \(3 rows\)/);
    // Not a terminal: one plain progress line at the end (a short job has nothing to say before it).
    assert.match(
      r.stderr,
      /^\[clink\] doubling {2}FINISHED {2}[\d.]+s {2}in 3 records {2}out 3 records\njob [0-9a-f]{8} \(trivial\) finished in/,
    );
    const jobs = await clink(['jobs', at, '--json'], h.dir);
    const list = JSON.parse(jobs.stdout) as { jobId: string; name: string; state: string }[];
    assert.deepEqual(
      list.find((j) => j.jobId === jobId),
      { ...list.find((j) => j.jobId === jobId)!, name: 'doubling', state: 'FINISHED' },
    );
    const table = await clink(['jobs', at], h.dir);
    assert.match(table.stdout, new RegExp(`${jobId} \\| doubling \\| FINISHED`));
  });

  test('submit --wait on a terminal: progress redrawn while the job runs, with rates and checkpoints, and left at the end', async () => {
    const args = [
      'submit',
      join(FIXTURES, 'ckpt-keyed.ts'),
      at,
      '--param',
      'rate=6000',
      '--checkpoint-dir',
      join(h.dir, 'ck-progress'),
      '--checkpoint-interval-ms',
      '300',
      '--wait',
      '--max-rows',
      '1',
    ];
    const r = await runCliOnTerminal(args, h.dir, 120_000);
    assert.equal(r.code, 0, r.stdout);
    const frames = progressFrames(r.stdout, 'ckpt-keyed');
    assert.ok(
      frames.some((f) =>
        /RUNNING {2}[\d.]+s {2}in [\d,]+ records \([\d,]+\/s\) .* {2}checkpoints \d+ \(last \d+\)/.test(f),
      ),
      frames.join(' | '),
    );
    assert.match(
      frames.at(-1)!,
      /^\[clink\] ckpt-keyed {2}FINISHED {2}[\d.]+s {2}in 30,000 records {2}out [\d,]+ records {2}checkpoints \d+ \(last \d+\)\r?\n/,
    );
  });

  test('submit without --wait returns at once; cancel stops the job', async () => {
    const r = await clink(['submit', join(FIXTURES, 'unbounded.ts'), at, '-p', '2'], h.dir);
    assert.equal(r.code, 0, r.stderr);
    const jobId = r.stdout.trim();
    await h.waitForJob(jobId, ['RUNNING']);
    const c = await clink(['cancel', jobId, at], h.dir);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, new RegExp(`job ${jobId} cancelling`));
    await h.waitForJob(jobId, ['CANCELED']);
    const again = await clink(['cancel', jobId, at], h.dir);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already ended \(CANCELED\)/);
  });

  test('rescale: --parallelism rescales a running job and prints what changed; bad usage exits 2, a refusal 1', async () => {
    const r = await clink(
      [
        'submit',
        join(FIXTURES, 'unbounded.ts'),
        at,
        '-p',
        '2',
        '--checkpoint-dir',
        join(h.dir, 'ck-rescale'),
        '--checkpoint-interval-ms',
        '200',
      ],
      h.dir,
    );
    assert.equal(r.code, 0, r.stderr);
    const jobId = r.stdout.trim();
    await h.waitForJob(jobId, ['RUNNING']);
    const none = await clink(['rescale', jobId, at], h.dir);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^error: give --parallelism <n> or --operator <uid>=<n>/);
    const bad = await clink(['rescale', jobId, at, '--operator', 'map'], h.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /expected <uid>=<parallelism>, the parallelism a whole number >= 1, got 'map'/);
    const unknown = await clink(['rescale', jobId, at, '--operator', 'nope=2'], h.dir);
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.stderr,
      new RegExp(`^error: rescale of job ${jobId} refused: job 'unbounded' has no operator 'nope'; its operators are `),
    );
    const ok = await clink(['rescale', jobId, at, '--parallelism', '3'], h.dir);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(
      ok.stdout,
      new RegExp(`^job ${jobId} rescaled \\(_inline_source_0 2 -> 3, .*\\) from checkpoint \\d+; it paused \\d+ ms\n$`),
    );
    assert.equal((await clink(['cancel', jobId, at], h.dir)).code, 0);
    await h.waitForJob(jobId, ['CANCELED']);
    // Without a checkpoint directory there is nothing to restore from.
    const bare = (await clink(['submit', join(FIXTURES, 'unbounded.ts'), at], h.dir)).stdout.trim();
    await h.waitForJob(bare, ['RUNNING']);
    const refused = await clink(['rescale', bare, at, '--parallelism', '2'], h.dir);
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr.trim(),
      `error: rescale of job ${bare} refused: a rescale restores from a checkpoint, and it has no checkpoint directory; submit it with --checkpoint-dir`,
    );
    assert.equal((await clink(['cancel', bare, at], h.dir)).code, 0);
  });

  test("slot sharing: the README's two workers of 4 slots run -p 8; a second slot sharing group is refused, naming the groups", async () => {
    const r = await clink(
      ['submit', join(FIXTURES, 'shared-slots.ts'), at, '-p', '8', '--wait', '--output', 'json'],
      h.dir,
    );
    assert.equal(r.code, 0, r.stderr);
    const { collected } = JSON.parse(r.stdout) as { collected: { counts: { key: number; count: number }[] } };
    const finals = new Map<number, number>();
    for (const c of collected.counts) finals.set(c.key, Math.max(finals.get(c.key) ?? 0, c.count));
    assert.deepEqual([...finals.values()], Array<number>(16).fill(250));
    const split = await clink(
      ['submit', join(FIXTURES, 'shared-slots.ts'), at, '-p', '8', '--param', 'sinkGroup=sinks'],
      h.dir,
    );
    assert.equal(split.code, 1);
    assert.equal(
      split.stderr,
      "error: submit refused: not enough free slots: the job needs 16 (slot sharing group 'default': 8, 'sinks': 8), 8 of the cluster's 8 are free\n",
    );
  });

  test('submit --wait of a failing job exits 1 with the job’s error', async () => {
    const r = await clink(['submit', join(FIXTURES, 'failing.ts'), at, '--wait'], h.dir);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^error: job failed: operator 'explode' \(map, subtask 1\/1\) failed: Error: record 5 is bad/m,
    );
    // The worker (with its own cache) got the source map beside the module: the frame is the author's line.
    assert.match(r.stderr, /caused by: Error: record 5 is bad\n\s+at .*fixtures\/jobs\/failing\.ts:\d+:\d+/);
  });

  test('clink run --workers 0 runs everything in one process with the same results', async () => {
    const r = await clink(['run', join(FIXTURES, 'trivial.ts'), '--workers', '0', '--output', 'json'], h.dir);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { default: number[] }).default.sort(),
      [2, 4, 6],
    );
    assert.match(r.stderr, /finished in [\d.]+ s \(parallelism 1, in this process\)/);
  });
});
