// High availability with real processes: coordinators standing for leadership in one HA directory
// (the file lock), workers finding the leader there, and a checkpointed job writing the transactional
// file sink. Whatever happens to the leader, the committed output is exactly the uninterrupted run's.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterHarness, type NodeProcess } from '../harness/cluster.js';
import { haJob, SINK_JOB } from '../harness/file-sink-job.js';
import { FencedError, fencedWrite } from '../../src/ha/index.js';
import type { JobView } from '../../src/coordinator/index.js';
import { runCli } from '../harness/cli.js';
import { SCENARIO, visibleLines } from '../helpers.js';

/** The line a new leader logs when it takes the job over: the checkpoint it restored from. */
async function takenOverFrom(h: ClusterHarness, leader: NodeProcess, jobId: string): Promise<number> {
  const line = await h.waitForLog(
    leader,
    new RegExp(`^job ${jobId} \\(ckpt-file-sink\\) taken over at epoch \\d+ from `),
  );
  return Number(line.restoredFrom);
}

const portClosed = (port: number): Promise<boolean> =>
  new Promise((r) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), r(false)));
    s.once('error', () => r(true));
  });

describe('high availability with the file lock', () => {
  test(
    'kill -9 of the leader mid-stream: a standby takes over from the last checkpoint and the output is the uninterrupted run, every record once',
    SCENARIO,
    async () => {
      const r = await haJob({ workers: 2, slots: 2, ha: { coordinators: 2 } });
      try {
        const { leader: old, epoch } = await r.h.waitForLeader();
        assert.equal(epoch, 1);
        old.child.kill('SIGKILL');
        const { leader, epoch: next } = await r.h.waitForLeader(old);
        assert.equal(next, 2);
        assert.ok((await takenOverFrom(r.h, leader, r.jobId)) > 0, 'resumed from a checkpoint, not from the start');
        const done = await r.ended();
        assert.equal(done.state, 'FINISHED', done.error);
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
        assert.match((await r.h.http('/metrics')).text, /^clink_ha_jobs_recovered_total 1$/m);
        const leaderRecord = JSON.parse(await readFile(join(r.h.dir, 'ha', 'active-leader.json'), 'utf8')) as {
          epoch: number;
          port: number;
        };
        assert.deepEqual([leaderRecord.epoch, leaderRecord.port], [2, r.h.controlPort]);
        // The ended job's record is the new leader's, and a third coordinator would list it.
        const history = JSON.parse(await readFile(join(r.h.dir, 'ha', 'history', `${r.jobId}.json`), 'utf8')) as {
          state: string;
          epoch: number;
        };
        assert.deepEqual([history.state, history.epoch], ['FINISHED', 2]);
        // A third coordinator, leading after the second, lists the ended job from that record.
        r.h.standCoordinator();
        leader.child.kill('SIGKILL');
        await r.h.waitForLeader(leader);
        const listed = await r.h.waitForJob<JobView>(r.jobId, ['FINISHED']);
        assert.equal(listed.sinkRecords, done.sinkRecords);
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    'kill -9 of the leader and a worker together: the standby takes over on the survivor, exact output',
    SCENARIO,
    async () => {
      const r = await haJob({ workers: 2, slots: 2, ha: { coordinators: 2 } });
      try {
        const { leader: old } = await r.h.waitForLeader();
        const victim = (await r.view()).subtasks[0]!.workerId;
        old.child.kill('SIGKILL');
        r.h.worker(victim).child.kill('SIGKILL');
        const { leader } = await r.h.waitForLeader(old);
        assert.ok((await takenOverFrom(r.h, leader, r.jobId)) > 0);
        const done = await r.ended();
        assert.equal(done.state, 'FINISHED', done.error);
        assert.ok(
          done.subtasks.every((t) => t.workerId !== victim),
          'nothing runs on the dead worker',
        );
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    'a takeover before the job completed a checkpoint starts it from the beginning, exact output',
    SCENARIO,
    async () => {
      const r = await haJob(
        { workers: 2, slots: 2, ha: { coordinators: 2 } },
        { intervalMs: 60_000, waitForCheckpoint: false, rate: 5000 },
      );
      try {
        const { leader: old } = await r.h.waitForLeader();
        old.child.kill('SIGKILL');
        const { leader } = await r.h.waitForLeader(old);
        await r.h.waitForLog(
          leader,
          new RegExp(`^job ${r.jobId} \\(ckpt-file-sink\\) taken over at epoch 2 from the beginning`),
        );
        const done = await r.ended();
        assert.equal(done.state, 'FINISHED', done.error);
        assert.deepEqual(await visibleLines(r.out), r.expected);
      } finally {
        await r.h.close();
      }
    },
  );

  test(
    "clink submit --wait --ha-dir follows the new leader across a takeover; clink jobs with both coordinators' addresses finds the leader",
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 2, ha: { coordinators: 2 } });
      try {
        const { leader: old } = await h.waitForLeader();
        const oldPort = h.controlPort;
        const out = join(h.dir, 'out');
        const ha = `--ha-dir=${join(h.dir, 'ha')}`;
        const submit = runCli(
          [
            'submit',
            SINK_JOB,
            '-p',
            '2',
            '--param',
            `out=${out}`,
            '--param',
            'rate=3000',
            '--checkpoint-dir',
            join(h.dir, 'ckpt'),
            '--checkpoint-interval-ms',
            '500',
            '--wait',
            '--no-typecheck',
            ha,
          ],
          h.dir,
          120_000,
        );
        let running: { jobId: string; state: string } | undefined;
        while (!running) {
          running = (await h.http<{ jobs: { jobId: string; state: string }[] }>('/api/v1/jobs')).body.jobs.find(
            (j) => j.state === 'RUNNING',
          );
          await sleep(50);
        }
        old.child.kill('SIGKILL');
        const { leader } = await h.waitForLeader(old);
        await takenOverFrom(h, leader, running.jobId);
        const r = await submit;
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, new RegExp(`following the new leader for job ${running.jobId}`));
        assert.match(r.stderr, new RegExp(`job ${running.jobId} \\(ckpt-file-sink\\) finished in`));
        const jobs = await runCli(
          ['jobs', '--json', `--coordinator=127.0.0.1:${oldPort},127.0.0.1:${h.controlPort}`],
          h.dir,
        );
        assert.equal(jobs.code, 0, jobs.stderr);
        assert.deepEqual(
          (JSON.parse(jobs.stdout) as { jobId: string; state: string }[]).map((j) => [j.jobId, j.state]),
          [[running.jobId, 'FINISHED']],
        );
      } finally {
        await h.close();
      }
    },
  );

  test(
    'three candidates: exactly one leads; when it dies exactly one of the other two takes over',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 1, ha: { coordinators: 3 } });
      try {
        const { leader: first } = await h.waitForLeader();
        const states = async (): Promise<string[]> =>
          Promise.all(
            h.coordinators
              .filter((c) => c.child.exitCode === null && c.child.signalCode === null)
              .map(async (c) => (JSON.parse(await readFile(c.readyFile!, 'utf8')) as { state: string }).state),
          );
        assert.deepEqual((await states()).sort(), ['leader', 'standby', 'standby']);
        const standby = h.coordinators.find((c) => c !== first)!;
        const health = await fetch(
          `http://127.0.0.1:${(JSON.parse(await readFile(standby.readyFile!, 'utf8')) as { httpPort: number }).httpPort}/api/v1/health`,
        );
        const body = (await health.json()) as { status: string; leader?: { port: number; epoch: number } };
        assert.equal(body.status, 'standby');
        first.child.kill('SIGKILL');
        const { epoch } = await h.waitForLeader(first);
        assert.equal(epoch, 2);
        await h.waitForWorkers(1);
        assert.deepEqual((await states()).sort(), ['leader', 'standby']);
      } finally {
        await h.close();
      }
    },
  );

  test(
    'SIGSTOP of the leader and its lock holder killed: a standby leads at a higher epoch; the old one, resumed, stands down and its record is not the leader',
    SCENARIO,
    async () => {
      const r = await haJob({ workers: 2, slots: 2, ha: { coordinators: 2 } });
      try {
        const { leader: old } = await r.h.waitForLeader();
        const oldPort = r.h.controlPort;
        const holder = Number((await r.h.waitForLog(old, /^standing for leadership in /)).lockHolderPid);
        old.child.kill('SIGSTOP');
        process.kill(holder, 'SIGKILL');
        const { leader, epoch } = await r.h.waitForLeader(old);
        assert.equal(epoch, 2);
        await takenOverFrom(r.h, leader, r.jobId);
        // What the old leader would write at its epoch over the records its successor now owns is refused.
        const ha = join(r.h.dir, 'ha');
        for (const record of [
          join(ha, 'active-leader.json'),
          join(ha, 'jobs', r.jobId, 'manifest.json'),
          join(r.h.dir, 'ckpt', '_jobs', r.jobId, 'RESTORED'),
        ]) {
          await assert.rejects(fencedWrite(record, 1, { stale: true }), FencedError, record);
        }
        old.child.kill('SIGCONT');
        await r.h.waitForLog(
          old,
          /^lost leadership: the lock holder process \d+ was killed \(SIGKILL\); stopping this coordinator/,
        );
        while (!(await portClosed(oldPort))) await sleep(20);
        const done = await r.ended();
        assert.equal(done.state, 'FINISHED', done.error);
        assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
        const leaderRecord = JSON.parse(await readFile(join(r.h.dir, 'ha', 'active-leader.json'), 'utf8')) as {
          epoch: number;
          port: number;
        };
        assert.deepEqual(
          [leaderRecord.epoch, leaderRecord.port],
          [2, r.h.controlPort],
          'the superseded leader did not write over its successor',
        );
      } finally {
        for (const c of r.h.coordinators) c.child.kill('SIGCONT');
        await r.h.close();
      }
    },
  );
});
