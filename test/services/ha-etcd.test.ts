// High availability through etcd, against the real etcd-server that `npm run test:services` starts
// (CLINK_TEST_ETCD): leader election with a short lease, workers finding the leader in etcd, and the
// windowed file-sink job's committed output exactly the uninterrupted run's across a takeover.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { memoryLogger } from '../../src/log/index.js';
import { EtcdElection } from '../../src/ha/index.js';
import { visibleLines } from '../helpers.js';
import { haJob } from '../harness/file-sink-job.js';
import { setTimeout as sleep } from 'node:timers/promises';

const ETCD = process.env.CLINK_TEST_ETCD;
const endpoint = (): string => {
  assert.ok(
    ETCD,
    'CLINK_TEST_ETCD names the etcd these tests use: run them with npm run test:services, which starts one',
  );
  return ETCD;
};
const LEASE_TTL_S = 3;

describe('high availability with etcd', () => {
  test('two candidates in one cluster: exactly one leads; it resigns and the other leads at the next epoch, proclaiming where it listens', async () => {
    const { log } = memoryLogger();
    const cluster = `unit-${process.pid}-${Date.now()}`;
    const elected: [string, number][] = [];
    const make = (name: string): EtcdElection => {
      const e = new EtcdElection({ endpoints: [endpoint()], cluster, leaseTtlS: LEASE_TTL_S, host: '127.0.0.1', log });
      e.onBecomeLeader((epoch) => void elected.push([name, epoch]));
      return e;
    };
    const a = make('a');
    const b = make('b');
    try {
      await a.start();
      await b.start();
      while (elected.length === 0) await sleep(10);
      await sleep(300);
      assert.equal(elected.length, 1, 'exactly one leads');
      const [leader, standby] = elected[0]![0] === 'a' ? [a, b] : [b, a];
      await leader.announce({ host: '127.0.0.1', port: 6123 });
      assert.equal((await standby.currentLeader())?.port, 6123);
      await leader.close();
      while (elected.length < 2) await sleep(10);
      assert.equal(elected[1]![1], elected[0]![1] + 1);
      await standby.announce({ host: '127.0.0.1', port: 7000 });
      assert.deepEqual(
        [(await standby.currentLeader())?.port, (await standby.currentLeader())?.epoch],
        [7000, elected[1]![1]],
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('kill -9 of the leader mid-stream: the standby takes over within the lease and the output is the uninterrupted run', async () => {
    const r = await haJob({ workers: 2, slots: 2, ha: { coordinators: 2, etcd: endpoint(), leaseTtlS: LEASE_TTL_S } });
    try {
      const { leader: old, epoch } = await r.h.waitForLeader();
      const killedAt = Date.now();
      old.child.kill('SIGKILL');
      const { epoch: next } = await r.h.waitForLeader(old);
      assert.equal(next, epoch + 1);
      assert.ok(Date.now() - killedAt < (LEASE_TTL_S + 5) * 1000, `elected ${Date.now() - killedAt} ms after the kill`);
      const done = await r.ended();
      assert.equal(done.state, 'FINISHED', done.error);
      assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
    } finally {
      await r.h.close();
    }
  });

  test('SIGSTOP of the leader past its lease: a standby leads; the old one, resumed, has lost its lease, stands down, and the output is exact', async () => {
    const r = await haJob({ workers: 2, slots: 2, ha: { coordinators: 2, etcd: endpoint(), leaseTtlS: LEASE_TTL_S } });
    try {
      const { leader: old, epoch } = await r.h.waitForLeader();
      old.child.kill('SIGSTOP');
      const { epoch: next } = await r.h.waitForLeader(old);
      assert.equal(next, epoch + 1);
      old.child.kill('SIGCONT');
      await r.h.waitForLog(old, /^lost leadership: its etcd lease was lost/);
      const done = await r.ended();
      assert.equal(done.state, 'FINISHED', done.error);
      assert.deepEqual(await visibleLines(r.out), r.expected, 'every window result exactly once');
    } finally {
      for (const c of r.h.coordinators) c.child.kill('SIGCONT');
      await r.h.close();
    }
  });
});
