import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobView } from '../../src/coordinator/index.js';
import { ClusterHarness, type NodeProcess } from '../harness/cluster.js';
import { SCENARIO } from '../helpers.js';

const job = (name: string): string => join(resolve(import.meta.dirname, '../fixtures/jobs'), `${name}.ts`);

async function workerHealth(w: NodeProcess): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${w.httpPort}/api/v1/health`);
  await r.body?.cancel();
  return r.status;
}

async function workerMetric(w: NodeProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${w.httpPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : Number.NaN;
}

describe('workers that reconnect by themselves', () => {
  test(
    'the coordinator restarts: workers report 503 meanwhile, register again by themselves, and a new job runs on them',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 2, workerArgs: ['--reconnect-max-backoff-ms=400'] });
      try {
        const w1 = h.worker('w1');
        assert.equal(await workerHealth(w1), 200);
        assert.equal(await workerMetric(w1, 'clink_worker_control_connected'), 1);
        const old = h.coordinator;
        old.child.kill('SIGKILL');
        await old.exited;
        let status = 0;
        for (let i = 0; i < 100 && status !== 503; i++) {
          await sleep(20);
          status = await workerHealth(w1);
        }
        assert.equal(status, 503, 'health is 503 while the worker has no coordinator');
        assert.equal(await workerMetric(w1, 'clink_worker_control_connected'), 0);
        await h.restartCoordinator();
        await h.waitForWorkers(2);
        assert.equal(await workerHealth(w1), 200);
        assert.equal(await workerMetric(w1, 'clink_worker_control_reconnects_total'), 1);
        assert.equal(await workerMetric(w1, 'clink_worker_control_disconnects_total'), 1);
        assert.ok((await workerMetric(w1, 'clink_worker_control_connection_attempts_total')) >= 2);
        // The new session listens on a data port of its own, and the ready file says which. Its number
        // may be the old one's (the kernel may hand a freed port out again); the job below runs over it.
        const registered = w1.logs.filter((l) => /^registered with the coordinator/.test(String(l.msg)));
        assert.equal(registered.length, 2);
        assert.equal(
          (JSON.parse(await readFile(w1.readyFile!, 'utf8')) as { dataPort: number }).dataPort,
          registered[1]!.dataPort,
        );
        const { jobId, client } = await h.submit(job('trivial'), { parallelism: 2 });
        assert.equal((await client.waitForCompletion(jobId)).ok, true);
        assert.equal(w1.child.exitCode, null, 'the worker process lived through it');
      } finally {
        await h.close();
      }
    },
  );

  test(
    'a worker paused past the heartbeat timeout rejoins as a new session after SIGCONT, and runs nothing of the old one',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 2 });
      try {
        const { jobId, client } = await h.submit(job('unbounded'), { parallelism: 2 });
        await h.waitForJob(jobId, ['RUNNING']);
        const w2 = h.worker('w2');
        w2.child.kill('SIGSTOP');
        await h.waitForLog(h.coordinator, /^worker lost: w2 \(heartbeat timeout\)$/);
        w2.child.kill('SIGCONT');
        const line = await h.waitForLog(h.coordinator, /^worker registered: w2 \(session [3-9]\d*,/);
        assert.ok(line, 'a new session of w2');
        // The job (no checkpoints) failed with the loss; nothing of it runs on the new session.
        const outcome = await client.waitForCompletion(jobId);
        assert.equal(outcome.error, 'worker lost: w2 (heartbeat timeout)');
        const view = (await h.http<JobView>(`/api/v1/jobs/${jobId}`)).body;
        assert.ok(view.subtasks.every((t) => t.finished));
        // The worker counts the reconnect once it has the RegisterAck, a moment after the coordinator logs the registration.
        let reconnects = 0;
        for (let i = 0; i < 200 && reconnects === 0; i++) {
          reconnects = await workerMetric(w2, 'clink_worker_control_reconnects_total');
          if (reconnects === 0) await sleep(25);
        }
        assert.equal(reconnects, 1);
      } finally {
        await h.close();
      }
    },
  );
});

test(
  'a coordinator that goes silent (paused, socket still open) past --coordinator-heartbeat-timeout-ms: the worker ends its session and registers a new one',
  SCENARIO,
  async () => {
    const h = await ClusterHarness.start({
      workers: 1,
      slots: 2,
      workerArgs: ['--coordinator-heartbeat-timeout-ms=1500', '--reconnect-max-backoff-ms=300'],
    });
    try {
      const w1 = h.worker('w1');
      h.coordinator.child.kill('SIGSTOP');
      await h.waitForLog(w1, /^no frame from the coordinator for \d+ ms \(coordinator heartbeat timeout 1500 ms\)$/);
      h.coordinator.child.kill('SIGCONT');
      await h.waitForLog(h.coordinator, /^worker registered: w1 \(session 2,/);
      assert.equal(await workerHealth(w1), 200);
      assert.ok((await workerMetric(w1, 'clink_worker_control_disconnects_total')) >= 1);
    } finally {
      await h.close();
    }
  },
);
