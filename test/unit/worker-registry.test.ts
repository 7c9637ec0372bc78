// The watchdog's three verdicts, in-process on a fake clock: sessions with a stand-in outbox and
// connection (the verdicts read only their clocks and states), and a recorder of what was declared gone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_COORDINATOR_CONFIG } from '../../src/coordinator/index.js';
import type { WorkerSession } from '../../src/coordinator/job-state.js';
import { WorkerRegistry } from '../../src/coordinator/worker-registry.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import type { Clock } from '../../src/util/index.js';

function registry() {
  let now = 50_000;
  const clock: Clock = { now: () => now, after: () => () => undefined, every: () => () => undefined };
  const gone: string[] = [];
  const { log, lines } = memoryLogger();
  const metrics = new ClinkMetrics();
  const r = new WorkerRegistry({
    config: { ...DEFAULT_COORDINATOR_CONFIG, heartbeatTimeoutMs: 2_000, outboundStallTimeoutMs: 10_000 },
    clock,
    log,
    watchdogLog: log,
    metrics,
    events: {
      registered: () => undefined,
      progress: () => undefined,
      frame: () => undefined,
      gone: (_s, error) => void gone.push(error),
    },
  });
  const add = (
    id: string,
    outbox: Partial<{ stopped: { byItself: boolean; reason: string; detail: string }; stalledMs: number }> = {},
  ): WorkerSession => {
    const s = {
      id,
      session: r.sessions.size + 1,
      state: 'active',
      lastSeen: now,
      conn: { close: () => undefined },
      outbox: {
        stopped: outbox.stopped,
        queuedFrames: 2,
        stalledForMs: () => outbox.stalledMs ?? 0,
        abort: () => undefined,
        restartStallClock: () => undefined,
      },
    } as unknown as WorkerSession;
    r.sessions.set(id, s);
    return s;
  };
  return { r, add, gone, lines, metrics, advance: (ms: number) => (now += ms), now: () => now };
}

test('silence: a worker with no frame for longer than the heartbeat timeout is lost, not one at exactly the timeout', () => {
  const h = registry();
  const w = h.add('w1');
  h.advance(2_000);
  h.r.judge(h.now());
  assert.deepEqual(h.gone, []);
  h.advance(1);
  h.r.judge(h.now());
  assert.deepEqual(h.gone, ['worker lost: w1 (heartbeat timeout)']);
  assert.equal(w.state, 'lost');
  assert.equal(h.r.sessions.has('w1'), false);
  assert.ok(h.lines().some((l) => l.msg === 'worker lost: w1 (heartbeat timeout)'));
  h.r.judge(h.now());
  assert.equal(h.gone.length, 1, 'a lost session is judged once');
});

test('stall and overflow: an outbox that makes no progress, or stopped by itself, loses its worker with the cause', () => {
  const h = registry();
  h.add('stalled', { stalledMs: 10_001 });
  h.add('overflowed', { stopped: { byItself: true, reason: 'overflow', detail: 'control frames above 10000' } });
  h.add('fine', { stalledMs: 10_000 });
  h.r.judge(h.now());
  assert.deepEqual(h.gone.sort(), [
    'worker lost: overflowed (outbound queue stopped (overflow): control frames above 10000)',
    'worker lost: stalled (no outbound progress for 10001 ms with 3 frames pending)',
  ]);
  assert.deepEqual([...h.r.sessions.keys()], ['fine']);
});

test('after the process was paused, every clock starts again: nobody is judged on time that could not be used', () => {
  const h = registry();
  h.add('w1');
  h.advance(60_000);
  h.r.restartClocks(h.now());
  h.r.judge(h.now());
  assert.deepEqual(h.gone, []);
  h.advance(2_001);
  h.r.judge(h.now());
  assert.deepEqual(h.gone, ['worker lost: w1 (heartbeat timeout)']);
});
