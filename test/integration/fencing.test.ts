// Fencing from the worker's side, against coordinators driven by hand over real sockets: a session
// drops frames of an epoch below the one it bound and re-binds on a higher one; a supervisor refuses a
// coordinator (or an announced leader) below the highest epoch it has admitted, epoch 0 included.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fencedWrite } from '../../src/ha/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { FrameReader } from '../../src/net/index.js';
import { decodeMessage, encodeFrame, LOCAL_PROTOCOL, makeMessage, type Message } from '../../src/protocol/index.js';
import { leaderSource } from '../../src/ha/index.js';
import { Worker, WorkerSupervisor, type WorkerConfig } from '../../src/worker/index.js';

/** A coordinator that registers every worker at `epoch` and hands each session's socket to the test. */
async function handCoordinator(epoch: number): Promise<{
  server: Server;
  port: number;
  sessions: Socket[];
  registered: Promise<Socket>;
  close: () => Promise<void>;
}> {
  const sessions: Socket[] = [];
  let onRegistered!: (s: Socket) => void;
  const registered = new Promise<Socket>((r) => (onRegistered = r));
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    void (async () => {
      const reader = new FrameReader(socket);
      const first = await reader.next();
      if (!first || decodeMessage(first).type !== 'Register') return socket.destroy();
      socket.write(
        encodeFrame(
          makeMessage('RegisterAck', {
            ok: true,
            message: '',
            protocolVersion: LOCAL_PROTOCOL.version,
            minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
            session: 1,
            epoch,
          }),
        ),
      );
      sessions.push(socket);
      onRegistered(socket);
      // Answer heartbeats so the session stays up.
      for (;;) {
        const f = await reader.next().catch(() => null);
        if (!f) return;
        const m = decodeMessage(f);
        if (m.type === 'Heartbeat') socket.write(encodeFrame(makeMessage('HeartbeatAck', { seq: m.seq, epoch })));
      }
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    sessions,
    registered,
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const config = (port: number): WorkerConfig => ({
  id: 'w1',
  coordinatorHost: '127.0.0.1',
  coordinatorPort: port,
  slots: 1,
  dataHost: '127.0.0.1',
  heartbeatIntervalMs: 100,
  peerUpdateTimeoutMs: 30_000,
  batchSize: 1_000,
  batchLingerMs: 0,
  taskIsolation: 'none',
  coordinatorHeartbeatTimeoutMs: 0,
});

const send = (s: Socket, m: Message): void => void s.write(encodeFrame(m));

describe('fencing on the worker side', () => {
  test('a session drops a frame of a lower epoch (counted, logged at error) and re-binds on a higher one', async () => {
    const c = await handCoordinator(2);
    const { log, lines } = memoryLogger();
    const metrics = new ClinkMetrics();
    const w = await Worker.start(config(c.port), { log, metrics });
    try {
      assert.equal(w.epoch, 2);
      const socket = await c.registered;
      send(socket, makeMessage('CancelJob', { jobId: 'j', reason: 'from the past', subtasks: [], epoch: 1 }));
      while ((await metrics.value('clink_worker_fenced_frames_total')) === 0) await sleep(10);
      assert.equal(w.epoch, 2);
      assert.ok(
        lines().some(
          (l) =>
            l.level === 50 && /dropped CancelJob from a superseded coordinator \(epoch 1 < 2\)/.test(String(l.msg)),
        ),
      );
      send(socket, makeMessage('CancelJob', { jobId: 'j', reason: 'from the new leader', subtasks: [], epoch: 3 }));
      const bound = (): number => w.epoch;
      while (bound() !== 3) await sleep(10);
      assert.equal(await metrics.value('clink_worker_fenced_frames_total'), 1);
    } finally {
      await w.close();
      await c.close();
    }
  });

  test('a supervisor refuses a leader below the highest epoch it has admitted, an unfenced epoch 0 included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-fence-'));
    const leaderAt = (port: number, epoch: number): Promise<void> =>
      fencedWrite(join(dir, 'active-leader.json'), epoch, { host: '127.0.0.1', port, at: 0, node: 'test' }).catch(
        () => undefined,
      );
    const newer = await handCoordinator(5);
    const unfenced = await handCoordinator(0);
    const { log, lines } = memoryLogger();
    const source = leaderSource({ haDir: dir })!;
    await leaderAt(newer.port, 5);
    const s = WorkerSupervisor.launch(
      config(0),
      { log, metrics: new ClinkMetrics() },
      { initialBackoffMs: 10, maxBackoffMs: 50 },
      undefined,
      source,
    );
    try {
      await newer.registered;
      while (s.worker?.epoch !== 5) await sleep(10);
      // The leader goes away and the record is rewritten (by hand, past the fence) to name an epoch-0 coordinator.
      await rm(join(dir, 'active-leader.json'));
      await fencedWrite(join(dir, 'active-leader.json'), 0, {
        host: '127.0.0.1',
        port: unfenced.port,
        at: 0,
        node: 'test',
      });
      await newer.close();
      while (!lines().some((l) => /has epoch 0, below epoch 5 this worker has admitted/.test(String(l.msg))))
        await sleep(10);
      assert.equal(unfenced.sessions.length, 0, 'never registered with the lower epoch');
    } finally {
      await s.close();
      await unfenced.close();
      source.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
