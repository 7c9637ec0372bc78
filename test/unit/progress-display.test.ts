// The CLI's progress display on an injected clock: a redrawn line on a terminal, plain lines otherwise.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProgressDisplay, type JobProgressSample } from '../../src/cli/progress.js';

const sample = (over: Partial<JobProgressSample> = {}): JobProgressSample => ({
  state: 'RUNNING',
  sourceRecords: 0,
  sinkRecords: 0,
  checkpointsCompleted: 0,
  lastCheckpointId: 0,
  restarts: 0,
  lastRestartCause: '',
  retries: 0,
  ...over,
});

function display(tty: boolean): { d: ProgressDisplay; out: string[]; clock: { t: number } } {
  const out: string[] = [];
  const clock = { t: 0 };
  return {
    d: new ProgressDisplay({ write: (s: string) => out.push(s) }, 'job', {
      tty,
      now: () => clock.t,
      plainIntervalMs: 10_000,
      rateWindowMs: 3_000,
    }),
    out,
    clock,
  };
}

test('on a terminal: one line redrawn with rates over the window, checkpoints and restarts; a restart gets a line of its own', () => {
  const { d, out, clock } = display(true);
  d.show(sample());
  assert.equal(out.at(-1), '\r\x1b[2K[clink] job  RUNNING  0.0s  in 0 records  out 0 records');
  clock.t = 1_000;
  d.show(sample({ sourceRecords: 5_000, sinkRecords: 4_000 }));
  assert.equal(
    out.at(-1),
    '\r\x1b[2K[clink] job  RUNNING  1.0s  in 5,000 records (5,000/s)  out 4,000 records (4,000/s)',
  );
  clock.t = 5_000; // the first sample has left the 3 s window: the rate is over the last 4 s
  d.show(sample({ sourceRecords: 13_000, sinkRecords: 12_000, checkpointsCompleted: 2, lastCheckpointId: 7 }));
  assert.equal(
    out.at(-1),
    '\r\x1b[2K[clink] job  RUNNING  5.0s  in 13,000 records (2,000/s)  out 12,000 records (2,000/s)  checkpoints 2 (last 7)',
  );
  clock.t = 6_000;
  d.show(
    sample({
      state: 'RESTARTING',
      sourceRecords: 13_000,
      sinkRecords: 12_000,
      checkpointsCompleted: 2,
      lastCheckpointId: 7,
      restarts: 1,
      lastRestartCause: 'worker lost: w1 (silence)',
    }),
  );
  assert.equal(out.at(-2), '\r\x1b[2K[clink] job  restart 1: worker lost: w1 (silence)\n');
  assert.match(out.at(-1)!, /RESTARTING {2}6\.0s .* {2}restarts 1$/);
  d.end(
    sample({
      state: 'FINISHED',
      sourceRecords: 20_000,
      sinkRecords: 20_000,
      checkpointsCompleted: 3,
      lastCheckpointId: 9,
      restarts: 1,
    }),
  );
  assert.equal(
    out.at(-1),
    '\r\x1b[2K[clink] job  FINISHED  6.0s  in 20,000 records  out 20,000 records  checkpoints 3 (last 9)  restarts 1\n',
  );
});

test('not a terminal: a line when something happens or every interval, none for each sample', () => {
  const { d, out, clock } = display(false);
  for (let t = 0; t < 10_000; t += 1_000) {
    clock.t = t;
    d.show(sample({ sourceRecords: t }));
  }
  assert.deepEqual(out, [], 'a short quiet run prints nothing before its end');
  clock.t = 10_000;
  d.show(sample({ sourceRecords: 10_000 }));
  assert.equal(out.length, 1);
  assert.match(
    out[0]!,
    /^\[clink\] job {2}RUNNING {2}10\.0s {2}in 10,000 records \(1,000\/s\) {2}out 0 records \(0\/s\)\n$/,
  );
  clock.t = 11_000;
  d.show(
    sample({ state: 'RESTARTING', sourceRecords: 10_000, restarts: 1, lastRestartCause: 'subtask a#0 failed: boom' }),
  );
  assert.match(out[1]!, /^\[clink\] job {2}RESTARTING .*restarts 1 {2}\(restart: subtask a#0 failed: boom\)\n$/);
  clock.t = 12_000;
  d.show(sample({ state: 'RUNNING', sourceRecords: 10_000, restarts: 1 }));
  assert.equal(out.length, 3, 'running again after the restart is a line too');
  d.end(undefined);
  assert.match(out[3]!, /^\[clink\] job {2}RUNNING {2}12\.0s {2}in 10,000 records {2}out 0 records {2}restarts 1\n$/);
});
