// A mesh run's failures with real processes (design record 017): kill -9 of one member stops the run on
// every member with the cause and exit 1; with --restart the killed member, started again at its address,
// rejoins, every member resumes from the last completed checkpoint, and the transactional file sink's
// committed output equals an uninterrupted run's, line for line (exactly once).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runJob } from '../../src/index.js';
import { loadJobModule } from '../../src/loader/index.js';
import { runCli } from '../harness/cli.js';
import { freePorts, startMember, type Member } from '../harness/mesh.js';
import { SCENARIO, visibleLines } from '../helpers.js';

const SINK_JOB = resolve(import.meta.dirname, '../fixtures/jobs/ckpt-file-sink.ts');

describe('mesh run failures', () => {
  let dir: string;
  let expected: string[];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clink-mesh-chaos-'));
    const loaded = await loadJobModule(SINK_JOB, { cacheDir: join(dir, 'c') });
    await runJob(loaded.job, { parallelism: 2, params: { out: join(dir, 'expected') } });
    expected = await visibleLines(join(dir, 'expected'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Three members of the file-sink job at p=2 (one slot each: the sink runs on two of them), on fixed addresses. */
  async function start(
    name: string,
    extra: string[],
  ): Promise<{ members: Member[]; again: (i: number) => Member; out: string; ckpt: string; exchange: number[] }> {
    const out = join(dir, name, 'out');
    const ckpt = join(dir, name, 'ckpt');
    const [control, ...exchange] = await freePorts(4);
    const args = [SINK_JOB, '--no-typecheck', '-p', '2', '--param', `out=${out}`, '--param', 'rate=3000', ...extra];
    // Only the leader is given the checkpoint flags: the members run with its settings.
    const checkpoints = ['--checkpoint-dir', ckpt, '--checkpoint-interval-ms', '300'];
    const member = (i: number): Member =>
      startMember(
        i === 0
          ? [
              ...args,
              ...checkpoints,
              '--lead',
              '3',
              '--control',
              `127.0.0.1:${control}`,
              '--exchange',
              `127.0.0.1:${exchange[0]}`,
            ]
          : [...args, '--join', `127.0.0.1:${control}`, '--exchange', `127.0.0.1:${exchange[i]}`],
        dir,
      );
    return { members: [0, 1, 2].map(member), again: member, out, ckpt, exchange };
  }

  /** Wait until the run has a completed checkpoint. */
  async function checkpointed(leader: Member): Promise<void> {
    await leader.waitFor(/checkpoint \d+ completed for job mesh-ckpt-file-sink/);
  }

  test('kill -9 of a member without --restart: every other member stops with the cause, exit 1', SCENARIO, async () => {
    const { members, exchange } = await start('no-restart', []);
    await checkpointed(members[0]!);
    members[1]!.kill();
    const [leader, , other] = await Promise.all(members.map((m) => m.exited));
    // The cause names the member killed (its position is its address's place in the sorted set).
    for (const r of [leader!, other!]) {
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `^error: mesh run of ckpt-file-sink failed: member \\d \\(127\\.0\\.0\\.1:${exchange[1]}\\) lost \\(.*\\); run every member with --restart to resume from the last checkpoint$`,
          'm',
        ),
      );
    }
  });

  test('SIGSTOP of a member past the heartbeat timeout: the others stop naming it, exit 1', SCENARIO, async () => {
    const { members, exchange } = await start('stopped', ['--mesh-heartbeat-timeout-ms', '2000']);
    await checkpointed(members[0]!);
    members[1]!.kill('SIGSTOP');
    try {
      const [leader, , other] = await Promise.all([members[0]!.exited, Promise.resolve(undefined), members[2]!.exited]);
      for (const r of [leader!, other!]) {
        assert.equal(r.code, 1, r.stderr);
        assert.match(
          r.stderr,
          new RegExp(
            `^error: mesh run of ckpt-file-sink failed: member \\d \\(127\\.0\\.0\\.1:${exchange[1]}\\) lost \\(no heartbeat for 2000 ms\\)`,
            'm',
          ),
        );
      }
    } finally {
      members[1]!.kill('SIGKILL');
      await members[1]!.exited;
    }
  });

  test(
    'kill -9 of the leader: the members exit 1 naming it; the mesh checkpoint restores in a cluster, exactly once',
    SCENARIO,
    async () => {
      const { members, out, ckpt } = await start('leader-lost', []);
      await checkpointed(members[0]!);
      members[0]!.kill();
      const [, a, b] = await Promise.all(members.map((m) => m.exited));
      for (const r of [a!, b!]) {
        assert.equal(r.code, 1, r.stderr);
        assert.match(
          r.stderr,
          /^error: mesh run of ckpt-file-sink failed: the mesh leader at 127\.0\.0\.1:\d+ was lost \(.*\); run every member with --restart to resume from the last checkpoint$/m,
        );
      }
      // Coordinator mode takes the mesh's checkpoint as its restore point and finishes the job.
      const restored = await runCli(
        [
          'run',
          SINK_JOB,
          '--no-typecheck',
          '--no-progress',
          '-p',
          '2',
          '--workers',
          '2',
          '--param',
          `out=${out}`,
          '--restore-from-dir',
          join(ckpt, '_jobs', 'mesh-ckpt-file-sink'),
          '--checkpoint-dir',
          join(ckpt, 'cluster'),
          '--checkpoint-interval-ms',
          '300',
        ],
        dir,
        120_000,
      );
      assert.equal(restored.code, 0, restored.stderr);
      assert.deepEqual(await visibleLines(out), expected);
    },
  );

  test(
    'kill -9 of a member with --restart: it rejoins at its address, the run resumes from the last checkpoint, exactly once',
    SCENARIO,
    async () => {
      const { members, again, out, ckpt } = await start('restart', ['--restart']);
      await checkpointed(members[0]!);
      members[1]!.kill();
      await members[1]!.exited;
      const back = again(1);
      await back.waitFor(/resuming from checkpoint \d+/);
      const [leader, , other] = await Promise.all(members.map((m) => m.exited));
      const rejoined = await back.exited;
      for (const r of [leader!, other!, rejoined]) assert.equal(r.code, 0, r.stderr);
      assert.match(leader!.stderr, /finished in [\d.]+ s \(parallelism 2, mesh of 3 members, 1 restart\)/);
      assert.deepEqual(await visibleLines(out), expected);
      // The checkpoint it resumed from is in coordinator mode's layout: one marker per checkpoint, RESTORED beside them.
      const names = await readdir(join(ckpt, '_jobs', 'mesh-ckpt-file-sink'));
      assert.ok(names.some((n) => /^COMPLETED-\d+$/.test(n)) && names.includes('RESTORED'), names.join(', '));
    },
  );

  test("a cluster's checkpoint restores in a mesh (--restore-from-dir), exactly once", SCENARIO, async () => {
    const out = join(dir, 'from-cluster', 'out');
    const ckpt = join(dir, 'from-cluster', 'ckpt');
    const job = [SINK_JOB, '--no-typecheck', '-p', '2', '--param', `out=${out}`, '--param', 'rate=3000'];
    const cluster = startMember(
      [...job, '--no-progress', '--workers', '2', '--checkpoint-dir', ckpt, '--checkpoint-interval-ms', '300'],
      dir,
    );
    await cluster.waitFor(/checkpoint \d+ completed for job/);
    cluster.kill('SIGINT');
    assert.equal((await cluster.exited).code, 130);
    const [control, ...exchange] = await freePorts(4);
    const args = [
      ...job,
      '--restore-from-dir',
      ckpt,
      '--checkpoint-dir',
      join(dir, 'from-cluster', 'mesh'),
      '--checkpoint-interval-ms',
      '300',
    ];
    const members = [0, 1, 2].map((i) =>
      startMember(
        i === 0
          ? [...args, '--lead', '3', '--control', `127.0.0.1:${control}`, '--exchange', `127.0.0.1:${exchange[0]}`]
          : [...args, '--join', `127.0.0.1:${control}`, '--exchange', `127.0.0.1:${exchange[i]}`],
        dir,
      ),
    );
    const results = await Promise.all(members.map((m) => m.exited));
    for (const r of results) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /resuming from checkpoint \d+/);
    }
    assert.deepEqual(await visibleLines(out), expected);
  });
});
