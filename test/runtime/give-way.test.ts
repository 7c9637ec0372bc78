// A busy source gives its thread's event loop a turn every millisecond (other tasks, frames from other
// processes), but sends its partly filled batches only every ten (YIELD_INTERVAL_MS) or when it waits.
// A busy task with inputs turns the loop only at those ten (or when its queue runs dry). Time is the
// tasks' own clock (runJob's taskClock), moved by the work itself: what is asserted does not depend on
// how busy the machine is.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defineConnector, defineJob, runJob } from '../../src/index.js';

/** The tasks' clock, in ms; it starts at the wall clock's reading so a thread's earlier yields are behind it. */
let clockMs = performance.now();
const taskClock = (): number => clockMs;

/** Work `ms` on the tasks' clock, as a CPU-bound read would, without a turn of the event loop. */
function busy(ms: number): void {
  clockMs += ms;
}

const READS = 40;

/** Counts the event loop's turns between start() and stop() (a setImmediate chain that ends at stop). */
function loopTurns(): { start(): void; stop(): void; readonly count: number } {
  let count = 0;
  let counting = false;
  const tick = (): void => {
    if (!counting) return;
    count++;
    setImmediate(tick);
  };
  return {
    start() {
      counting = true;
      setImmediate(tick);
    },
    stop() {
      counting = false;
    },
    get count() {
      return count;
    },
  };
}

describe('a busy task gives way', () => {
  test('every millisecond the event loop turns, and records still leave in batches', async () => {
    const turns = loopTurns();
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
    turns.start();
    try {
      await runJob(
        defineJob({ name: 'give-way', version: '1' }, (env) =>
          env
            .fromSource(source)
            .keyBy(() => 1)
            .process<number>({ processElement: (v, _ctx, out) => (arrivedIn.push(turns.count), out.collect(v)) })
            .collect(),
        ),
        { taskClock },
      );
    } finally {
      turns.stop();
    }
    assert.equal(arrivedIn.length, READS);
    // Without giving way the loop turned once per 10 ms of reading: ~6 times in 60 ms.
    assert.ok(
      turns.count >= READS * 0.9,
      `the event loop turned ${turns.count} times over ${READS} reads of 1.5 ms each`,
    );
    // Sent at every turn, each record would arrive in a turn of its own.
    const batches = new Set(arrivedIn).size;
    assert.ok(
      batches <= READS / 3,
      `${READS} records arrived in ${batches} turns: partly filled batches left at every turn`,
    );
  });

  test('a busy task with inputs does not: it turns the loop at its ten-millisecond yields', async () => {
    const turns = loopTurns();
    // The source emits every record in one read, a batch each (batchSize 1); the consumer works 1.5 ms on each.
    const source = defineConnector<number, never>({
      name: 'quick',
      source: {
        createReader: () => ({
          read: (out) => {
            for (let n = 0; n < READS; n++) out.collect(n);
            return 'END';
          },
        }),
      },
    });
    let seen = 0;
    try {
      await runJob(
        defineJob({ name: 'busy-consumer', version: '1' }, (env) =>
          env
            .fromSource(source)
            .keyBy(() => 1)
            .process<number>({
              processElement: (v, _ctx, out) => {
                // Turns are counted while the consumer works, not while the job starts or ends.
                if (seen++ === 0) turns.start();
                busy(1.5);
                if (seen === READS) turns.stop();
                out.collect(v);
              },
            })
            .collect(),
        ),
        { batchSize: 1, taskClock },
      );
    } finally {
      turns.stop();
    }
    assert.equal(seen, READS);
    // 60 ms of work in 40 batches: giving way after each would turn the loop ~40 times; yields, ~6.
    assert.ok(
      turns.count <= READS / 3,
      `the event loop turned ${turns.count} times over ${READS} records of 1.5 ms each`,
    );
  });
});
