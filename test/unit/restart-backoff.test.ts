import assert from 'node:assert/strict';
import { test } from 'node:test';
import { restartBackoffMs } from '../../src/coordinator/index.js';

test('restart backoff: the first restart is immediate, then 1 s doubling, capped at the maximum', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => restartBackoffMs(n, 1_000, 60_000)),
    [0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000],
  );
  assert.equal(restartBackoffMs(1_000, 1_000, 60_000), 60_000, 'no overflow however many');
  assert.equal(restartBackoffMs(3, 0, 60_000), 0, 'an initial backoff of 0 turns it off');
});
