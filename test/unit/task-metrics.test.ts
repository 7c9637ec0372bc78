// Per-task rates and shares from subtask reports, on the times they are handed (no waiting).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { nextSample, taskMetrics } from '../../src/coordinator/task-metrics.js';
import type { JobState } from '../../src/coordinator/job-state.js';
import type { SubtaskProgressReport } from '../../src/protocol/index.js';

const job = (): JobState => ({ subtaskProgress: new Map() }) as unknown as JobState;
/** What the job's master does with a report: keep the sample nextSample says. */
function recordSubtaskProgress(j: JobState, r: SubtaskProgressReport, now: number): void {
  const key = `${r.taskId}#${r.subtaskIndex}`;
  const next = nextSample(j.subtaskProgress.get(key), r, now);
  if (next) j.subtaskProgress.set(key, next);
}
const report = (o: Partial<SubtaskProgressReport>): SubtaskProgressReport => ({
  jobId: 'j',
  taskId: 't',
  subtaskIndex: 0,
  recordsIn: 0,
  recordsOut: 0,
  backpressuredMs: 0,
  watermark: -Infinity,
  idleMs: 0,
  lagRecords: 0,
  ageMs: 0,
  stateExpired: 0,
  ...o,
});

describe('task metrics', () => {
  test('rates and shares are taken over the reports’ ages, not over when they arrived', () => {
    const j = job();
    recordSubtaskProgress(j, report({ ageMs: 1_000, recordsOut: 1_000, backpressuredMs: 200 }), 50);
    // Read 500 ms later, but delivered 900 ms later (a late heartbeat).
    recordSubtaskProgress(j, report({ ageMs: 1_500, recordsOut: 2_000, backpressuredMs: 450, idleMs: 100 }), 950);
    const m = taskMetrics(j, 't', 1);
    assert.equal(m.measured, 1);
    assert.equal(m.recordsOutPerSecond, 2_000);
    assert.equal(m.backpressure, 0.5);
    assert.equal(m.busy, 0.3);
  });

  test('the same reading delivered again changes nothing: a waiting task stays backpressured', () => {
    const j = job();
    recordSubtaskProgress(j, report({ ageMs: 1_000, recordsOut: 500, backpressuredMs: 400 }), 0);
    recordSubtaskProgress(j, report({ ageMs: 1_500, recordsOut: 500, backpressuredMs: 900 }), 500);
    assert.equal(taskMetrics(j, 't', 1).backpressure, 1);
    // The job thread had not posted a newer one when the next heartbeat went.
    recordSubtaskProgress(j, report({ ageMs: 1_500, recordsOut: 500, backpressuredMs: 900 }), 1_000);
    assert.equal(taskMetrics(j, 't', 1).backpressure, 1);
    assert.equal(taskMetrics(j, 't', 1).measured, 1);
  });

  test('a younger report, or one that counts less, is a new attempt: measured again from it', () => {
    const j = job();
    recordSubtaskProgress(j, report({ ageMs: 5_000, recordsIn: 900, backpressuredMs: 100 }), 0);
    recordSubtaskProgress(j, report({ ageMs: 5_500, recordsIn: 1_000, backpressuredMs: 100 }), 500);
    assert.equal(taskMetrics(j, 't', 1).measured, 1);
    recordSubtaskProgress(j, report({ ageMs: 300, recordsIn: 2_000, backpressuredMs: 0 }), 1_000);
    assert.equal(taskMetrics(j, 't', 1).measured, 0, 'younger');
    recordSubtaskProgress(j, report({ ageMs: 800, recordsIn: 2_500 }), 1_500);
    recordSubtaskProgress(j, report({ ageMs: 900, recordsIn: 10 }), 2_000);
    assert.equal(taskMetrics(j, 't', 1).measured, 0, 'counts less');
  });

  test('an older worker’s reports (no age) are measured over their arrival, and two at one moment are not measured', () => {
    const j = job();
    recordSubtaskProgress(j, report({ recordsIn: 0, backpressuredMs: 0 }), 1_000);
    recordSubtaskProgress(j, report({ recordsIn: 1_000, backpressuredMs: 250 }), 1_500);
    const m = taskMetrics(j, 't', 1);
    assert.equal(m.recordsInPerSecond, 2_000);
    assert.equal(m.backpressure, 0.5);
    recordSubtaskProgress(j, report({ recordsIn: 1_100, backpressuredMs: 300 }), 1_500);
    assert.equal(taskMetrics(j, 't', 1).measured, 0);
  });

  test('a task waiting all the time reads as fully backpressured however a job thread’s posts and the heartbeats interleave (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 700 }), // the job thread posts its reading every `post` ms
        fc.integer({ min: 100, max: 700 }), // heartbeats every `beat` ms
        fc.integer({ min: 0, max: 699 }), // the heartbeats' phase
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 40, maxLength: 40 }), // each heartbeat's delay on the way
        (post, beat, phase, delays) => {
          const j = job();
          for (let i = 0; i < delays.length; i++) {
            const sentAt = 1_000 + phase + i * beat;
            const age = Math.floor(sentAt / post) * post; // the last reading posted before the heartbeat left
            recordSubtaskProgress(
              j,
              report({ ageMs: age, recordsOut: 100, backpressuredMs: age - 500 }),
              sentAt + delays[i]!,
            );
            const m = taskMetrics(j, 't', 1);
            if (m.measured === 1) assert.equal(m.backpressure, 1, `heartbeat ${i}`);
          }
          assert.equal(taskMetrics(j, 't', 1).measured, 1);
        },
      ),
      { numRuns: 500 },
    );
  });
});
