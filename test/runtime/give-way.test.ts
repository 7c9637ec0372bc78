// A busy task gives its thread's event loop a turn every millisecond (other tasks, frames from other
// processes), but sends its partly filled batches only every ten (YIELD_INTERVAL_MS) or when it waits.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defineConnector, defineJob, runJob } from '../../src/index.js';

/** Keep the thread busy for `ms` of wall time, as a CPU-bound read would. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('a busy task gives way', () => {
  test('every millisecond the event loop turns, and records still leave in batches', async () => {
    const READS = 40;
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns++;
      if (counting) setImmediate(tick);
    };
    // Each read works 1.5 ms and emits one record, never waiting: only the task's own yields let the loop turn.
    const source = defineConnector<number, never>({
      name: 'busy',
      source: {
        createReader: () => {
          let n = 0;
          return {
            read: (out) => {
              busy(1.5);
              out.collect(n++);
              return n < READS ? 'MORE' : 'END';
            },
          };
        },
      },
    });
    // The turn each record reached its consumer in: records of one batch arrive in one turn.
    const arrivedIn: number[] = [];
    setImmediate(tick);
    try {
      await runJob(
        defineJob({ name: 'give-way', version: '1' }, (env) =>
          env
            .fromSource(source)
            .keyBy(() => 1)
            .process<number>({ processElement: (v, _ctx, out) => (arrivedIn.push(turns), out.collect(v)) })
            .collect(),
        ),
      );
    } finally {
      counting = false;
    }
    assert.equal(arrivedIn.length, READS);
    // Without giving way the loop turned once per 10 ms of reading: ~6 times in 60 ms.
    assert.ok(turns >= READS * 0.9, `the event loop turned ${turns} times over ${READS} reads of 1.5 ms each`);
    // Sent at every turn, each record would arrive in a turn of its own.
    const batches = new Set(arrivedIn).size;
    assert.ok(batches <= READS / 3, `${READS} records arrived in ${batches} turns: partly filled batches left at every turn`);
  });
});
