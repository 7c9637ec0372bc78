import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadJobModule } from '../../src/loader/index.js';
import { FrameReader } from '../../src/net/index.js';
import { buildJob } from '../../src/sdk/index.js';
import {
  CLUSTER_PROTOCOL_VERSION,
  decodeMessage,
  encodeFrame,
  makeMessage,
  MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION,
  type Message,
  type MessageOf,
} from '../../src/protocol/index.js';
import { ClusterHarness, isRunning } from '../harness/cluster.js';
import { fakeWorker } from '../harness/fake-worker.js';
import { SCENARIO, waitFor } from '../helpers.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/jobs');
const job = (name: string): string => join(FIXTURES, `${name}.ts`);

describe('losing workers', () => {
  test(
    'kill -9 of a worker: "worker lost: <id> (heartbeat timeout)" within heartbeat_timeout + watchdog_interval, and the job fails with that cause',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 2, slots: 2 });
      try {
        const { jobId, client } = await h.submit(job('unbounded'), { parallelism: 2 });
        await h.waitForJob(jobId, ['RUNNING']);
        const victim = h.worker('w2');
        const killedAt = Date.now();
        victim.child.kill('SIGKILL');
        const line = await h.waitForLog(h.coordinator, /^worker lost: w2 \(heartbeat timeout\)$/);
        const after = (line.time as number) - killedAt;
        assert.ok(after >= 1_500 && after <= 2_000 + 100 + 700, `declared lost ${after} ms after the kill`);
        assert.equal(line.component, 'coordinator.watchdog');
        const outcome = await client.waitForCompletion(jobId);
        assert.equal(outcome.state, 'FAILED');
        assert.equal(outcome.error, 'worker lost: w2 (heartbeat timeout)');
        assert.match((await h.http('/metrics')).text, /clink_coordinator_workers_lost_total\{verdict="silence"\} 1/);
      } finally {
        await h.close();
      }
    },
  );

  test('a worker that stops reading is declared lost by the stall verdict', SCENARIO, async () => {
    // A long heartbeat timeout, so only the stall verdict (1 s) can fire while this test's own process
    // (which heartbeats for the fake worker) is busy with a 24 MiB module.
    const h = await ClusterHarness.start({
      workers: 0,
      coordinatorArgs: ['--outbound-stall-timeout-ms=1000', '--heartbeat-timeout-ms=10000'],
    });
    try {
      // A job whose module carries 24 MiB: its Deploy cannot fit in the socket buffers.
      const big = join(h.dir, 'big.ts');
      await writeFile(
        big,
        `import { defineJob } from 'clink';\nconst PAD = ${JSON.stringify('x'.repeat(24 * 1024 * 1024))};\nexport default defineJob({ name: 'big', version: '1' }, (env) => { env.fromElements([PAD.length]).collect(); });\n`,
      );
      const loaded = await loadJobModule(big, { cacheDir: join(h.dir, 'cache-client') });
      const built = buildJob(loaded.job, {});
      const fake = await fakeWorker(h.controlPort, 'reads-nothing');
      assert.equal((fake.ack as { ok: boolean }).ok, true);
      fake.socket.pause(); // heartbeats keep going out; nothing is read
      const client = await h.client();
      await client.submit({ module: loaded, spec: built.spec, params: {} });
      const line = await h.waitForLog(
        h.coordinator,
        /^worker lost: reads-nothing \((no outbound progress for \d+ ms with \d+ frames pending|heartbeat timeout)\)$/,
      );
      assert.match(String(line.msg), /no outbound progress for \d+ ms with \d+ frames pending/);
      assert.equal(line.component, 'coordinator.watchdog');
      assert.match((await h.http('/metrics')).text, /clink_coordinator_workers_lost_total\{verdict="stall"\} 1/);
      fake.stopHeartbeats();
      fake.socket.destroy();
    } finally {
      await h.close();
    }
  });

  test('an outbox past its bound is the overflow verdict at the next watchdog tick', SCENARIO, async () => {
    const h = await ClusterHarness.start({ workers: 1, slots: 2, coordinatorArgs: ['--max-outbound-bulk-bytes=1000'] });
    try {
      await h.submit(job('trivial')).catch(() => undefined);
      await h.waitForLog(
        h.coordinator,
        /^worker lost: w1 \(outbound queue stopped \(overflow\): bulk queue at its bound of 1000 bytes \(max_outbound_bulk_bytes\)\)$/,
      );
      assert.match(
        (await h.http('/metrics')).text,
        /clink_coordinator_outbound_frames_discarded_total\{class="bulk",reason="overflow"\} 0|clink_coordinator_workers_lost_total\{verdict="overflow"\} 1/,
      );
    } finally {
      await h.close();
    }
  });
});

test(
  'a worker registering again while its overflowed session awaits the verdict gets a retryable refusal',
  SCENARIO,
  async () => {
    // A slow watchdog leaves time between the overflow and its verdict.
    const h = await ClusterHarness.start({
      workers: 0,
      coordinatorArgs: [
        '--max-outbound-bulk-bytes=1000',
        '--watchdog-interval-ms=3000',
        '--heartbeat-timeout-ms=10000',
      ],
    });
    const first = await fakeWorker(h.controlPort, 'w9', { slots: 2 });
    try {
      await h.submit(job('trivial')).catch(() => undefined);
      await h.waitForLog(h.coordinator, /^Deploy to worker w9 refused: its outbox is stopped$|^outbound queue stopped/);
      const again = await fakeWorker(h.controlPort, 'w9', { slots: 2 });
      try {
        assert.equal(again.ack.type, 'RegisterAck');
        const ack = again.ack as Extract<Message, { type: 'RegisterAck' }>;
        assert.equal(ack.ok, false);
        assert.equal(ack.retryable, true);
        assert.match(ack.message, /^worker w9's session 1 is still being retired; register again shortly$/);
      } finally {
        again.stopHeartbeats();
        again.socket.destroy();
      }
    } finally {
      first.stopHeartbeats();
      first.socket.destroy();
      await h.close();
    }
  },
);

describe('stopping and admission', () => {
  test(
    'SIGTERM stops a busy worker: its job thread ends when told, not by the terminate at the end of its grace, and nothing is left running',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 1, slots: 4 });
      const pids = h.nodes.map((n) => n.child.pid!);
      try {
        const { jobId } = await h.submit(job('unbounded'), { parallelism: 2, params: { rate: '50000' } });
        await h.waitForJob(jobId, ['RUNNING']);
        await waitFor(
          'records flowing',
          async () => (await h.http<{ sourceRecords: number }>(`/api/v1/jobs/${jobId}`)).body.sourceRecords > 0,
        );
        const w = h.worker('w1');
        w.child.kill('SIGTERM');
        assert.equal(await w.exited, 0);
        // The busy subtasks stopped when cancelled: the thread was not terminated at the end of its grace.
        const terminated = w.logs.filter((l) => /did not end within \d+ ms of being told to stop/.test(String(l.msg)));
        assert.deepEqual(terminated, [], 'no job thread needed the grace');
      } finally {
        await h.close();
      }
      for (const pid of pids) assert.equal(isRunning(pid), false, `process ${pid} is gone`);
    },
  );

  test('a worker of an incompatible protocol is refused, naming both versions, and counted', SCENARIO, async () => {
    const h = await ClusterHarness.start({ workers: 0 });
    try {
      const fake = await fakeWorker(h.controlPort, 'from-the-future', { protocolVersion: 9, minCompatible: 7 });
      fake.stopHeartbeats();
      assert.equal((fake.ack as { ok: boolean }).ok, false);
      const [ours, oldest] = [CLUSTER_PROTOCOL_VERSION, MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION];
      assert.equal(
        (fake.ack as { message: string }).message,
        `protocol mismatch: the coordinator speaks protocol ${ours} (talks to ${oldest}..${ours}), ` +
          'worker from-the-future speaks 9 (talks to 7..9); upgrade the coordinator to protocol 7 or later',
      );
      assert.match((await h.http('/metrics')).text, /clink_protocol_mismatches_total 1/);
      fake.socket.destroy();
    } finally {
      await h.close();
    }
  });

  test(
    'a worker registering again while its clean finish is still in flight on the old connection: the finish counts, the job ends FINISHED',
    SCENARIO,
    async (t) => {
      const h = await ClusterHarness.start({ workers: 0 });
      try {
        const old = await fakeWorker(h.controlPort, 'quick', { protocolVersion: 2 });
        const reader = new FrameReader(old.socket);
        const submitted = h.submit(job('trivial'), { parallelism: 1 });
        let deploy: MessageOf<'Deploy'> | undefined;
        while (!deploy) {
          const m = decodeMessage((await reader.next())!);
          if (m.type === 'Deploy') deploy = m;
        }
        const tasks = deploy.tasks.map((t) => ({
          jobId: deploy.jobId,
          taskId: t.taskId,
          subtaskIndex: t.subtaskIndex,
        }));
        for (const t of tasks) old.socket.write(encodeFrame(makeMessage('SubtaskListening', { ...t, edgePorts: [] })));
        for (
          let m = decodeMessage((await reader.next())!);
          m.type !== 'PeerUpdate';
          m = decodeMessage((await reader.next())!)
        );
        old.stopHeartbeats();
        reader.close();
        // The new registration reaches the coordinator before the old connection's last frames do (as a
        // delayed segment would): those frames still count.
        const again = await fakeWorker(h.controlPort, 'quick', { protocolVersion: 2 });
        t.after(() => {
          again.stopHeartbeats();
          again.socket.destroy();
        });
        assert.equal((again.ack as { ok: boolean }).ok, true, JSON.stringify(again.ack));
        old.socket.end(
          Buffer.concat(tasks.map((t) => encodeFrame(makeMessage('SubtaskFinished', { ...t, ok: true, error: '' })))),
        );
        const { jobId, client } = await submitted;
        const outcome = await client.waitForCompletion(jobId);
        assert.equal(outcome.state, 'FINISHED', outcome.error);
        await h.waitForLog(h.coordinator, /^worker registered: quick \(session 2,/);
      } finally {
        await h.close();
      }
    },
  );

  test(
    'a registration on an older connection than the worker’s current session is refused as stale',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({ workers: 0 });
      try {
        const older = connect(h.controlPort, '127.0.0.1');
        await new Promise((r) => older.once('connect', r));
        await sleep(50); // the older connection is admitted first
        const current = await fakeWorker(h.controlPort, 'twice');
        assert.equal((current.ack as { ok: boolean }).ok, true);
        older.write(encodeFrame(makeMessage('Register', { workerId: 'twice', dataHost: '127.0.0.1' })));
        const reader = new FrameReader(older);
        const ack = decodeMessage((await reader.next())!) as { ok: boolean; message: string };
        assert.equal(ack.ok, false);
        assert.match(ack.message, /stale registration/);
        await h.waitForWorkers(1);
        current.stopHeartbeats();
        current.socket.destroy();
        older.destroy();
      } finally {
        await h.close();
      }
    },
  );
});

describe('watchdog and slots', () => {
  test(
    'a coordinator paused past the heartbeat timeout judges nothing on its late sweep (no worker is lost)',
    SCENARIO,
    async () => {
      // Workers wait longer for the coordinator than it is paused.
      const h = await ClusterHarness.start({
        workers: 2,
        slots: 2,
        workerArgs: ['--coordinator-heartbeat-timeout-ms=8000'],
      });
      try {
        h.coordinator.child.kill('SIGSTOP');
        await sleep(3_000); // longer than the 2 s heartbeat timeout
        h.coordinator.child.kill('SIGCONT');
        await h.waitForLog(h.coordinator, /^watchdog sweep came \d+ ms after the last; judging nothing/);
        await sleep(1_000);
        assert.equal(h.coordinator.logs.filter((l) => /^worker lost/.test(String(l.msg))).length, 0);
        await h.waitForWorkers(2);
      } finally {
        await h.close();
      }
    },
  );

  test(
    'a submit waits up to --submit-wait-for-slots-ms for a worker to bring the slots it needs',
    SCENARIO,
    async () => {
      const h = await ClusterHarness.start({
        workers: 1,
        slots: 1,
        coordinatorArgs: ['--submit-wait-for-slots-ms=15000'],
      });
      try {
        const pending = h.submit(job('unbounded'), { parallelism: 1 }); // needs 2 slots, 1 is there
        await sleep(300);
        await h.addWorker();
        const { jobId, client } = await pending;
        await h.waitForJob(jobId, ['RUNNING']);
        await client.cancel(jobId);
        assert.equal((await client.waitForCompletion(jobId)).state, 'CANCELED');
      } finally {
        await h.close();
      }
    },
  );
});

test(
  'nodes started by a process that is killed -9 exit on their own (nothing outlives a dead test)',
  SCENARIO,
  async () => {
    const { spawn } = await import('node:child_process');
    const { TSX } = await import('../harness/cli.js');
    const parent = spawn(
      process.execPath,
      ['--import', TSX, resolve(import.meta.dirname, '../fixtures/scripts/start-cluster.ts')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const { pids, dir } = await new Promise<{ pids: number[]; dir: string }>((res) =>
      parent.stdout.once('data', (d: Buffer) => res(JSON.parse(d.toString()) as { pids: number[]; dir: string })),
    );
    assert.equal(pids.length, 2);
    parent.kill('SIGKILL');
    // A condition, not a deadline: the nodes shut down gracefully, which a busy machine slows (a 5 s bound
    // failed while another cluster ran beside it).
    await waitFor(`the coordinator and worker (${pids.join(', ')}) exited with their parent`, () =>
      pids.every((p) => !isRunning(p)),
    );
    // A parent killed -9 cannot remove its temp dir; this test does.
    await (await import('node:fs/promises')).rm(dir, { recursive: true, force: true });
  },
);

test('a node whose parent goes away while it is still loading exits on its own', SCENARIO, async () => {
  const { spawn } = await import('node:child_process');
  const { TSX, BIN } = await import('../harness/cli.js');
  // A worker pointed at a port nothing listens on would look for its coordinator forever.
  const child = spawn(
    process.execPath,
    ['--import', TSX, BIN, 'node', '--role=worker', '--coordinator-port=1', '--reconnect-max-backoff-ms=200'],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // The channel closes long before the node has loaded its modules (hundreds of ms under tsx).
  child.disconnect();
  try {
    await waitFor('the worker exiting by itself', () => child.exitCode !== null || child.signalCode !== null);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; stderr: ${stderr.slice(-500)}`);
  }
  assert.equal(child.exitCode, 0, `the worker exited by itself with 0; stderr: ${stderr.slice(-500)}`);
});
