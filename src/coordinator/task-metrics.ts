/**
 * Per-task metrics from heartbeats: each running subtask reports its counts, the time it waited for room
 * downstream and for input, and its last watermark; rates, the backpressure ratio and the busy share come
 * from the difference between its last two reports. What the API and the console show of a running job's operators.
 */
import type { SubtaskProgressReport } from '../protocol/index.js';
import { subtaskKey } from '../plan/index.js';
import type { JobState } from './job-state.js';

/** A subtask's last report, when it came, and the one before it (rates are taken between the two). */
export interface SubtaskSample {
  report: SubtaskProgressReport;
  at: number;
  /** `spanMs` before this one: the two reports' ages' difference, or (an older worker's) their arrivals'. */
  previous?: { report: SubtaskProgressReport; spanMs: number };
}

/** A task's metrics: its subtasks' sums (the watermark: their minimum, as downstream sees it). */
export interface TaskMetrics {
  recordsIn: number;
  recordsOut: number;
  recordsInPerSecond: number;
  recordsOutPerSecond: number;
  /** The share of the last interval its busiest subtask spent waiting for room downstream, 0 to 1. */
  backpressure: number;
  /** The share of the last interval its busiest subtask spent working (neither waiting for input nor for room), 0 to 1. */
  busy: number;
  /** A source task's records not yet read from its external system (the sum over its subtasks). */
  lagRecords: number;
  /** Keyed state values removed as their TTL ran out, over its subtasks' current attempts. */
  stateExpired: number;
  /** The least watermark of its subtasks (null: none emitted yet, or none reported). */
  watermark: number | null;
  /** Subtasks with a report. */
  reporting: number;
  /** Subtasks with two reports, whose rates and shares are measured. */
  measured: number;
}

/**
 * The sample to keep after `report` (undefined: keep `last`). One that counts less than the last, or is
 * younger, starts over (a new attempt). A report read at the same age as the last is that reading again
 * (a job thread posts its counts on its own timer, which drifts against the heartbeat's) and changes
 * nothing: taken as a new sample it would measure no time waited over a heartbeat's interval, a
 * backpressured task at 0.
 */
export function nextSample(
  last: SubtaskSample | undefined,
  report: SubtaskProgressReport,
  now: number,
): SubtaskSample | undefined {
  const aged = report.ageMs > 0 && last !== undefined && last.report.ageMs > 0;
  const fresh =
    !last ||
    report.recordsIn < last.report.recordsIn ||
    report.recordsOut < last.report.recordsOut ||
    (aged ? report.ageMs < last.report.ageMs : now <= last.at);
  if (fresh) return { report, at: now };
  if (aged && report.ageMs === last.report.ageMs) return undefined;
  const spanMs = aged ? report.ageMs - last.report.ageMs : now - last.at;
  return { report, at: now, previous: { report: last.report, spanMs } };
}

export function taskMetrics(job: JobState, taskId: string, parallelism: number): TaskMetrics {
  const m: TaskMetrics = {
    recordsIn: 0,
    recordsOut: 0,
    recordsInPerSecond: 0,
    recordsOutPerSecond: 0,
    backpressure: 0,
    busy: 0,
    lagRecords: 0,
    stateExpired: 0,
    watermark: null,
    reporting: 0,
    measured: 0,
  };
  let watermark = Infinity;
  for (let i = 0; i < parallelism; i++) {
    const s = job.subtaskProgress.get(subtaskKey(taskId, i));
    if (!s) continue;
    m.reporting++;
    m.recordsIn += s.report.recordsIn;
    m.recordsOut += s.report.recordsOut;
    m.lagRecords += s.report.lagRecords;
    m.stateExpired += s.report.stateExpired;
    watermark = Math.min(watermark, s.report.watermark);
    const p = s.previous;
    if (!p) continue;
    m.measured++;
    const spanMs = p.spanMs;
    const seconds = spanMs / 1000;
    m.recordsInPerSecond += (s.report.recordsIn - p.report.recordsIn) / seconds;
    m.recordsOutPerSecond += (s.report.recordsOut - p.report.recordsOut) / seconds;
    const waited = (s.report.backpressuredMs - p.report.backpressuredMs) / spanMs;
    m.backpressure = Math.max(m.backpressure, Math.min(1, waited));
    m.busy = Math.max(m.busy, Math.min(1, Math.max(0, 1 - waited - (s.report.idleMs - p.report.idleMs) / spanMs)));
  }
  m.recordsInPerSecond = Math.round(m.recordsInPerSecond);
  m.recordsOutPerSecond = Math.round(m.recordsOutPerSecond);
  m.backpressure = Math.max(0, Math.round(m.backpressure * 100) / 100);
  m.busy = Math.round(m.busy * 100) / 100;
  m.watermark = m.reporting > 0 && Number.isFinite(watermark) ? watermark : null;
  return m;
}
