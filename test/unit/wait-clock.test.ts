// The wait clock behind a subtask's idle and backpressure figures, on an injected clock: a wait counts
// while it is under way, not only once it ends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WaitClock } from '../../src/runtime/index.js';

test('a wait counts while under way, and once ended stays counted', () => {
  let now = 1_000;
  const c = new WaitClock(() => now);
  assert.equal(c.totalMs, 0);
  c.begin();
  now += 250;
  assert.equal(c.totalMs, 250, 'the wait under way');
  now += 750;
  assert.equal(c.totalMs, 1_000);
  c.end();
  now += 5_000;
  assert.equal(c.totalMs, 1_000, 'not waiting: nothing added');
  c.begin();
  now += 10;
  c.end();
  assert.equal(c.totalMs, 1_010, 'waits add up');
});

test('a second begin does not restart the wait under way; an end without a wait changes nothing', () => {
  let now = 0;
  const c = new WaitClock(() => now);
  c.end();
  assert.equal(c.totalMs, 0);
  c.begin();
  now = 100;
  c.begin();
  now = 300;
  c.end();
  assert.equal(c.totalMs, 300);
});
