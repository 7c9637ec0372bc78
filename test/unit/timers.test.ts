import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNeverDelay, MAX_TIMER_DELAY_MS, setRepeating, setTimer, setTimerUntil } from '../../src/util/index.js';

test('a delay above the timer limit, Infinity or NaN means never: nothing is armed (Node would fire it after 1 ms)', async () => {
  for (const ms of [MAX_TIMER_DELAY_MS + 1, 3_000_000_000, Infinity, NaN]) {
    assert.equal(isNeverDelay(ms), true, String(ms));
    assert.equal(
      setTimer(() => assert.fail(`fired for ${ms}`), ms),
      undefined,
    );
    assert.equal(
      setRepeating(() => assert.fail(`fired for ${ms}`), ms),
      undefined,
    );
  }
  assert.equal(isNeverDelay(MAX_TIMER_DELAY_MS), false);
  let fired = 0;
  const t = setTimer(() => fired++, 1);
  assert.ok(t);
  while (fired === 0) await sleep(1);
});

test('a moment further ahead than a timer can wait is waited for in steps of the limit, never early', () => {
  const t = setTimerUntil(() => assert.fail('fired early'), Date.now() + 40 * 24 * 3600 * 1000);
  assert.equal((t as unknown as { _idleTimeout: number })._idleTimeout, MAX_TIMER_DELAY_MS);
  clearTimeout(t);
});
