// Bounded admission and client sessions, against a real coordinator process: floods of silent
// connections, clients that never read, too many sessions, idle ones, and frames begun and abandoned.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FrameReader } from '../../src/net/index.js';
import { decodeMessage, encodeFrame, makeMessage, type MessageOf } from '../../src/protocol/index.js';
import { runCli } from '../harness/cli.js';
import { ClusterHarness } from '../harness/cluster.js';
import { waitFor } from '../helpers.js';

async function open(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  await new Promise((r) => s.once('connect', r));
  return s;
}

/** A raw client session: HelloClient sent. */
async function rawClient(port: number, name = 'raw'): Promise<Socket> {
  const s = await open(port);
  s.write(
    encodeFrame(makeMessage('HelloClient', { clientName: name, protocolVersion: 2, minCompatibleProtocolVersion: 1 })),
  );
  return s;
}

const closed = (s: Socket): Promise<void> =>
  s.destroyed ? Promise.resolve() : new Promise((r) => s.once('close', () => r()));

/** The sum of a coordinator counter over its label sets. */
async function counter(h: ClusterHarness, name: string, labels = ''): Promise<number> {
  const text = (await h.http('/metrics')).text;
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('admission and client sessions', () => {
  test('70 silent connections (cap 64): clink jobs answers 10 of 10, and a new worker registers at its first attempt', async () => {
    const h = await ClusterHarness.start({ workers: 0 });
    const silent: Socket[] = [];
    try {
      for (let i = 0; i < 70; i++) silent.push(await open(h.controlPort));
      await waitFor(
        'the flood is being admitted or evicted',
        async () => (await counter(h, 'clink_coordinator_admissions_evicted_total')) >= 6,
      );
      for (let i = 0; i < 10; i++) {
        const r = await runCli(['jobs', `--coordinator=127.0.0.1:${h.controlPort}`], h.dir);
        assert.equal(r.code, 0, `run ${i}: ${r.stderr}`);
      }
      const w = await h.addWorker();
      await h.waitForWorkers(1);
      assert.equal(
        await h.workerMetric(w, 'clink_worker_control_connection_attempts_total'),
        1,
        'registered at its first attempt',
      );
    } finally {
      for (const s of silent) s.destroy();
      await h.close();
    }
  });

  test('connections whose first frames are all under way: a newcomer is refused with a line the CLI prints, exit 75', async () => {
    // Long read timeouts: the stalled admissions must outlast the CLI's start on a loaded machine.
    const h = await ClusterHarness.start({
      workers: 0,
      coordinatorArgs: ['--max-pending-connections=2', '--heartbeat-timeout-ms=60000', '--handshake-timeout-ms=60000'],
    });
    const started: Socket[] = [];
    try {
      // Each sends a first frame's header and a byte of its body, then stalls: further along than a newcomer.
      for (let i = 0; i < 2; i++) {
        const s = await open(h.controlPort);
        s.write(Buffer.from([0, 0, 0, 100, 1]));
        started.push(s);
      }
      await waitFor(
        'both first frames begun at the coordinator',
        async () => (await counter(h, 'clink_coordinator_admissions_pending_begun')) === 2,
      );
      const r = await runCli(['jobs', `--coordinator=127.0.0.1:${h.controlPort}`], h.dir);
      assert.equal(r.code, 75, r.stderr);
      assert.equal(
        r.stderr.trim(),
        'error: coordinator busy: 127.0.0.1 holds 2 of the 2 connections being admitted (its share of --max-pending-connections 2), each with its first frame under way; retry',
      );
      assert.ok((await counter(h, 'clink_coordinator_handshake_failures_total')) >= 1);
    } finally {
      for (const s of started) s.destroy();
      await h.close();
    }
  });

  test('a client that floods ListJobs and reads nothing is dropped as a slow reader; the coordinator answers others', async () => {
    const h = await ClusterHarness.start({ workers: 0 });
    try {
      const flood = await rawClient(h.controlPort, 'flood');
      flood.pause(); // never reads
      const request = encodeFrame(makeMessage('ListJobs', { includeCompleted: true }));
      const done = closed(flood);
      for (let i = 0; i < 200_000 && !flood.destroyed; i++) {
        if (!flood.write(request)) await Promise.race([new Promise((r) => flood.once('drain', r)), done, sleep(200)]);
      }
      await done;
      await waitFor(
        'counted',
        async () => (await counter(h, 'clink_coordinator_client_sessions_dropped_total', 'reason="slow_reader"')) === 1,
      );
      const r = await runCli(['jobs', `--coordinator=127.0.0.1:${h.controlPort}`], h.dir);
      assert.equal(r.code, 0, r.stderr);
    } finally {
      await h.close();
    }
  });

  test('--max-client-sessions: the session past the cap is refused (exit 75, one line); idle sessions are closed after --client-idle-timeout-ms', async () => {
    const h = await ClusterHarness.start({
      workers: 0,
      coordinatorArgs: ['--max-client-sessions=3', '--client-idle-timeout-ms=1500'],
    });
    const sessions: Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) sessions.push(await rawClient(h.controlPort, `idle-${i}`));
      await waitFor('3 sessions open', async () => (await counter(h, 'clink_coordinator_client_sessions ')) === 3);
      // The sessions stay busy while the CLI starts (which can take longer than the idle timeout under load).
      const request = encodeFrame(makeMessage('ListJobs', { includeCompleted: true }));
      for (const s of sessions) s.resume(); // replies read and dropped
      const keepAlive = setInterval(() => sessions.forEach((s) => s.write(request)), 250);
      const r = await runCli(['jobs', `--coordinator=127.0.0.1:${h.controlPort}`], h.dir).finally(() =>
        clearInterval(keepAlive),
      );
      assert.equal(r.code, 75, r.stderr);
      assert.equal(
        r.stderr.trim(),
        'error: coordinator busy: 3 client sessions are open (--max-client-sessions 3); retry',
      );
      assert.equal(await counter(h, 'clink_coordinator_client_sessions_refused_total'), 1);
      await Promise.all(sessions.map(closed));
      assert.equal(await counter(h, 'clink_coordinator_client_sessions_dropped_total', 'reason="idle"'), 3);
      const again = await runCli(['jobs', `--coordinator=127.0.0.1:${h.controlPort}`], h.dir);
      assert.equal(again.code, 0, again.stderr);
    } finally {
      for (const s of sessions) s.destroy();
      await h.close();
    }
  });

  test('--max-worker-sessions: a new worker past the cap is refused as busy and retries; it registers once a session ends', async () => {
    const h = await ClusterHarness.start({ workers: 2, coordinatorArgs: ['--max-worker-sessions=2'] });
    try {
      const third = h.spawnNode('w3', [
        '--role=worker',
        '--id=w3',
        `--coordinator-port=${h.controlPort}`,
        '--reconnect-max-backoff-ms=300',
      ]);
      await waitFor(
        'the third registration refused',
        async () => (await counter(h, 'clink_coordinator_worker_sessions_refused_total')) >= 1,
      );
      await h.waitForLog(
        h.coordinator,
        /^registration of worker w3 from 127\.0\.0\.1:\d+ refused: 2 worker sessions are open \(--max-worker-sessions 2\)$/,
      );
      await h.waitForLog(
        third,
        /cannot register with the coordinator \(the coordinator refused the registration: coordinator busy: 2 worker sessions are open, the most --max-worker-sessions allows; retry\); retrying/,
      );
      assert.deepEqual(
        (await h.http<{ workers: { workerId: string }[] }>('/api/v1/workers')).body.workers
          .map((w) => w.workerId)
          .sort(),
        ['w1', 'w2'],
      );
      h.worker('w1').child.kill('SIGTERM');
      await waitFor('w3 registered in the freed place', async () =>
        (await h.http<{ workers: { workerId: string }[] }>('/api/v1/workers')).body.workers.some(
          (w) => w.workerId === 'w3',
        ),
      );
    } finally {
      await h.close();
    }
  });

  test('a session that begins a 256 MiB frame and stalls is closed at --frame-body-timeout-ms, holding nothing after', async () => {
    const h = await ClusterHarness.start({ workers: 0, coordinatorArgs: ['--frame-body-timeout-ms=800'] });
    try {
      const s = await rawClient(h.controlPort, 'stall');
      const reader = new FrameReader(s);
      // A ListJobs round trip: the session is admitted and idle between frames is fine.
      s.write(encodeFrame(makeMessage('ListJobs', { includeCompleted: true })));
      assert.equal((decodeMessage((await reader.next())!) as MessageOf<'ListJobsReply'>).type, 'ListJobsReply');
      await sleep(1_000); // idle between frames, longer than the body timeout: still open
      assert.equal(s.destroyed, false);
      const header = Buffer.alloc(4);
      header.writeUInt32BE(256 * 1024 * 1024 - 1);
      s.write(Buffer.concat([header, Buffer.alloc(4 * 1024 * 1024, 1)]));
      const startedAt = Date.now();
      await closed(s).catch(() => undefined);
      await reader.next().catch(() => undefined);
      assert.ok(Date.now() - startedAt < 5_000, 'closed at the body timeout');
      await h.waitForLog(h.coordinator, /frame not complete within 800 ms of its first byte/);
    } finally {
      await h.close();
    }
  });
});
