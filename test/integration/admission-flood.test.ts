// A flood of slow connections from many addresses against a real coordinator (loopback has 127/8, so
// each flood connection comes from an address of its own pair): a worker that arrives in the middle of
// it registers at its first attempt, because each flooding address makes room from its own admissions.
// The silent connections' deadline is ten minutes, so the worker cannot have been let in by the flood
// timing out: no wall-clock bound is needed to tell eviction from waiting.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { Coordinator } from '../../src/coordinator/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { Worker } from '../../src/worker/index.js';

test('500 silent connections from 250 addresses do not hold up a worker registration: the flood evicts its own', async () => {
  const { log } = memoryLogger('error');
  const metrics = new ClinkMetrics();
  const c = await Coordinator.start(
    { port: 0, maxPendingConnections: 64, heartbeatTimeoutMs: 600_000, handshakeTimeoutMs: 600_000 },
    { log, metrics },
  );
  const flood: Socket[] = [];
  try {
    await Promise.all(
      Array.from(
        { length: 500 },
        (_, i) =>
          new Promise<void>((resolve) => {
            const s = connect({
              port: c.port,
              host: '127.0.0.1',
              localAddress: `127.0.${1 + Math.floor(i / 500)}.${2 + (i % 250)}`,
            });
            s.on('error', () => undefined);
            s.once('connect', () => resolve());
            s.once('close', () => resolve());
            flood.push(s);
          }),
      ),
    );
    // Worker.start registers once: a refusal would throw (the supervisor is what retries).
    const w = await Worker.start(
      {
        id: 'w1',
        coordinatorHost: '127.0.0.1',
        coordinatorPort: c.port,
        slots: 1,
        dataHost: '127.0.0.1',
        heartbeatIntervalMs: 200,
        peerUpdateTimeoutMs: 30_000,
        batchSize: 1_000,
        batchLingerMs: 0,
        taskIsolation: 'none',
      },
      { log, metrics: new ClinkMetrics() },
    );
    try {
      assert.deepEqual(
        c.workers().map((x) => x.workerId),
        ['w1'],
      );
      assert.ok((await metrics.value('clink_coordinator_admissions_evicted_total')) > 0, 'the flood evicted its own');
      assert.ok(
        flood.filter((s) => !s.destroyed).length > 0,
        'the worker got in while silent connections were still being admitted',
      );
    } finally {
      await w.close();
    }
  } finally {
    for (const s of flood) s.destroy();
    await c.stop();
  }
});
