// Connections closed for what their peer did: one line per peer address per interval in full (no stack),
// the rest summed up when the interval ends, every one counted by reason.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { PeerRejections } from '../../src/net/index.js';
import { FakeClock } from '../harness/fake-clock.js';

test('a flood from one address is one line and a summary per interval; another address gets its own; every closure is counted', async () => {
  const clock = new FakeClock();
  const { log, lines } = memoryLogger();
  const metrics = new ClinkMetrics();
  const r = new PeerRejections('coordinator', log, metrics, clock);
  for (let i = 0; i < 500; i++)
    r.record(`10.0.0.9:${40_000 + i}`, i % 2 === 0 ? 'malformed' : 'timeout', 'unknown message kind 250');
  r.record('10.0.0.7:5000', 'too_large', 'frame of 4294967295 bytes is above the 65536-byte cap');
  assert.deepEqual(
    lines().map((l) => String(l.msg)),
    [
      'connection from 10.0.0.9:40000 closed (malformed): unknown message kind 250',
      'connection from 10.0.0.7:5000 closed (too_large): frame of 4294967295 bytes is above the 65536-byte cap',
    ],
  );
  assert.ok(
    lines().every((l) => l.err === undefined),
    'no stack for what a peer sent',
  );
  clock.advance(10_000);
  assert.equal(
    String(lines().at(-1)!.msg),
    '499 more connections from 10.0.0.9 closed in the last 10 s (timeout 250, malformed 249)',
  );
  assert.equal(lines().length, 3, 'the address with one closure needs no summary');
  assert.equal(
    await metrics.value('clink_connections_rejected_total', { role: 'coordinator', reason: 'malformed' }),
    250,
  );
  assert.equal(
    await metrics.value('clink_connections_rejected_total', { role: 'coordinator', reason: 'timeout' }),
    250,
  );
  // A new interval: the address's next closure is told in full again.
  r.record('10.0.0.9:41000', 'malformed', 'again');
  assert.equal(String(lines().at(-1)!.msg), 'connection from 10.0.0.9:41000 closed (malformed): again');
  clock.advance(20_000);
  r.close();
});
