// The worker's timing decisions on an injected clock: heartbeats, the coordinator's silence, the stall
// watchdog and the reconnect backoff move only when the test moves the clock. The coordinator is driven
// by hand over a real socket in this process; nothing here waits on wall-clock time.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { FrameReader } from '../../src/net/index.js';
import { decodeMessage, encodeFrame, LOCAL_PROTOCOL, makeMessage, type MessageOf } from '../../src/protocol/index.js';
import { judgeStall } from '../../src/worker/job-thread.js';
import { THREAD_BOOT_TIMEOUT_MS } from '../../src/worker/thread-protocol.js';
import { reconnectDelayMs, Worker, WorkerSupervisor, type WorkerConfig } from '../../src/worker/index.js';
import { FakeClock } from '../harness/fake-clock.js';
import { waitFor } from '../helpers.js';

/** A coordinator that registers each worker and then says nothing: it only records the heartbeats it reads. */
async function silentCoordinator(): Promise<{
  port: number;
  heartbeats: MessageOf<'Heartbeat'>[];
  close: () => Promise<void>;
}> {
  const heartbeats: MessageOf<'Heartbeat'>[] = [];
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    void (async () => {
      const reader = new FrameReader(socket);
      const first = await reader.next().catch(() => null);
      if (!first || decodeMessage(first).type !== 'Register') return socket.destroy();
      const ack = {
        ok: true,
        message: '',
        protocolVersion: LOCAL_PROTOCOL.version,
        minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
        session: 1,
        epoch: 0,
      };
      socket.write(encodeFrame(makeMessage('RegisterAck', ack)));
      for (;;) {
        const f = await reader.next().catch(() => null);
        if (!f) return;
        const m = decodeMessage(f);
        if (m.type === 'Heartbeat') heartbeats.push(m);
      }
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    heartbeats,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const config = (port: number, o: Partial<WorkerConfig> = {}): WorkerConfig => ({
  id: 'w1',
  coordinatorHost: '127.0.0.1',
  coordinatorPort: port,
  slots: 1,
  dataHost: '127.0.0.1',
  heartbeatIntervalMs: 1_000,
  coordinatorHeartbeatTimeoutMs: 3_000,
  taskIsolation: 'none',
  ...o,
});

describe('the worker on an injected clock', () => {
  test('it heartbeats once per interval of its clock, and ends its session when the coordinator has said nothing for the timeout', async () => {
    const c = await silentCoordinator();
    const clock = new FakeClock();
    const { log, lines } = memoryLogger();
    const w = await Worker.start(config(c.port), { log, metrics: new ClinkMetrics(), clock });
    try {
      let ended: string | undefined;
      void w.ended.then((e) => (ended = e.reason === 'disconnected' ? e.detail : e.reason));
      assert.equal(c.heartbeats.length, 0, 'no heartbeat before the clock moves');
      clock.advance(1_000);
      await waitFor('the first heartbeat', () => c.heartbeats.length === 1);
      assert.equal(c.heartbeats[0]!.sentAtMs, clock.now(), 'stamped with the injected clock');
      clock.advance(2_000);
      await waitFor('two more heartbeats', () => c.heartbeats.length === 3);
      assert.equal(ended, undefined, 'silent for 3,000 ms: at the bound, not past it');
      clock.advance(1_000);
      await waitFor('the session to end', () => ended !== undefined);
      assert.equal(ended, 'no frame from the coordinator for 4000 ms (coordinator heartbeat timeout 3000 ms)');
      assert.equal(lines().filter((l) => l.msg === ended).length, 1, 'said once in the log');
      assert.equal(c.heartbeats.length, 3, 'the heartbeat that found the silence is not sent');
    } finally {
      await w.close();
      await c.close();
    }
  });

  test('a supervisor with no coordinator to reach retries after each backoff of its clock, and not before', async () => {
    const c = await silentCoordinator();
    await c.close(); // nothing listens on the port any more: every attempt is refused at once
    const clock = new FakeClock();
    const metrics = new ClinkMetrics();
    const attempts = async (): Promise<number> => (await metrics.workerControlAttempts.get()).values[0]?.value ?? 0;
    const s = WorkerSupervisor.launch(
      config(c.port),
      { log: memoryLogger().log, metrics, clock, random: () => 0.5 },
      { initialBackoffMs: 100, maxBackoffMs: 400 },
    );
    try {
      await waitFor(
        'the first attempt refused, its backoff set',
        async () => (await attempts()) === 1 && clock.pending > 0,
      );
      // Backoffs at random 0.5: 50, 100, 200, 200 (the cap of 400 halved).
      for (const [n, wait] of [
        [2, 50],
        [3, 100],
        [4, 200],
        [5, 200],
      ] as const) {
        clock.advance(wait - 1);
        assert.equal(await attempts(), n - 1, `attempt ${n} waits ${wait} ms`);
        clock.advance(1);
        await waitFor(`attempt ${n}`, async () => (await attempts()) === n && clock.pending > 0);
      }
    } finally {
      await s.close();
    }
  });
});

describe('worker timing decisions', () => {
  test('the reconnect backoff doubles from the initial wait to the cap, times the jitter', () => {
    const policy = { initialBackoffMs: 100, maxBackoffMs: 5_000 };
    assert.deepEqual(
      [0, 1, 2, 3, 5, 6, 40].map((a) => reconnectDelayMs(policy, a, 1)),
      [100, 200, 400, 800, 3_200, 5_000, 5_000],
    );
    assert.equal(reconnectDelayMs(policy, 3, 0), 0);
    assert.equal(reconnectDelayMs(policy, 3, 0.25), 200);
  });

  test('the stall watchdog: a tick resets it; a running thread is stalled at the bound, a booting one at the larger of the bound and the boot timeout', () => {
    const stall = 2_000;
    assert.equal(judgeStall({ ticks: 5, lastTicks: 4, lastTickAt: 0 }, 100_000, stall), 'ticked');
    assert.equal(judgeStall({ ticks: 5, lastTicks: 5, lastTickAt: 0 }, stall - 1, stall), 'waiting');
    assert.equal(judgeStall({ ticks: 5, lastTicks: 5, lastTickAt: 0 }, stall, stall), 'stalled');
    assert.equal(judgeStall({ ticks: 0, lastTicks: 0, lastTickAt: 0 }, THREAD_BOOT_TIMEOUT_MS - 1, stall), 'waiting');
    assert.equal(judgeStall({ ticks: 0, lastTicks: 0, lastTickAt: 0 }, THREAD_BOOT_TIMEOUT_MS, stall), 'boot-timeout');
    assert.equal(
      judgeStall({ ticks: 0, lastTicks: 0, lastTickAt: 0 }, 60_000, 90_000),
      'waiting',
      'a stall bound above the boot timeout applies to the boot too',
    );
  });
});
