/**
 * The autoscaler's decisions (`--autoscale min..max` on submit): pure, on the times it is handed, so
 * they are unit-tested in milliseconds. It watches each task's backpressure and busy share (from the
 * heartbeats) and asks for a rescale:
 *
 * - out (double, up to max) when for `sustainMs` some task has been backpressured at least
 *   `backpressureHigh` of the time, or busy at least `busyHigh` of it: the job cannot keep up with its
 *   input (a saturated task shows as busy when it shares its thread with what feeds it); or when its
 *   sources' lag behind their input (Kafka: records not read yet) stayed at `lagHigh` or more and did
 *   not shrink over that time;
 * - in (halve, down to min) when for `sustainMs` no task was busy more than `busyLow` of the time and
 *   none was backpressured: the job has far more subtasks than its input needs;
 *
 * never within `cooldownMs` of the job's last rescale (or start), and at most `maxChangesPerHour` in
 * any hour. Every decision, and every signal it declines to act on for a limit, carries its reason.
 */
import { COORDINATOR_DEFAULTS } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { Clock } from '../util/index.js';
import type { JobState } from './job-state.js';
import type { RescaleOutcome } from './rescaler.js';
import { taskMetrics } from './task-metrics.js';

export interface AutoscalePolicy {
  min: number;
  max: number;
  /** A task backpressured this share of the time or more is overloaded. @default 0.5 */
  backpressureHigh: number;
  /** A task busy this share of the time or more is saturated. @default 0.9 */
  busyHigh: number;
  /** No task busier than this share (and none backpressured) means the job is idle. @default 0.2 */
  busyLow: number;
  /** Sources this many records behind their input (and not catching up) are lagging. @default 10,000 */
  lagHigh: number;
  /** How long a signal must hold before it is acted on. @default 30 000 */
  sustainMs: number;
  /** Quiet time after a rescale (or the start). @default 60 000 */
  cooldownMs: number;
  /** Rescales allowed in any hour. @default 6 */
  maxChangesPerHour: number;
}

export const DEFAULT_AUTOSCALE_POLICY: Omit<AutoscalePolicy, 'min' | 'max'> = {
  backpressureHigh: 0.5,
  busyHigh: 0.9,
  busyLow: 0.2,
  lagHigh: COORDINATOR_DEFAULTS.autoscaleLagRecords,
  sustainMs: COORDINATOR_DEFAULTS.autoscaleSustainMs,
  cooldownMs: COORDINATOR_DEFAULTS.autoscaleCooldownMs,
  maxChangesPerHour: COORDINATOR_DEFAULTS.autoscaleMaxChangesPerHour,
};

/** One look at the job: the busiest task's backpressure and busy shares (0..1) over the last interval. */
export interface AutoscaleSample {
  at: number;
  parallelism: number;
  maxBackpressure: number;
  maxBusy: number;
  /** Records its sources have not read yet from their input (0: none, or they cannot tell). */
  sourceLag: number;
  /** The task behind the figures, for the reason. */
  backpressuredTask: string;
  busiestTask: string;
}

/** What the autoscaler remembers of a job between samples. */
export interface AutoscaleState {
  /** Since when the current signal has held (undefined: none holds), and the sources' lag then. */
  signal?: { kind: 'out' | 'in'; since: number; lag: number };
  /** When the job last changed parallelism (or started). */
  lastChangeAt: number;
  /** Rescales it asked for, when. */
  changes: number[];
}

/** What holds a rescale back that the signal asks for. */
export type AutoscaleLimit = 'bound' | 'cooldown' | 'rate';

export type AutoscaleDecision =
  | { action: 'none' }
  | { action: 'hold'; limit: AutoscaleLimit; reason: string }
  | { action: 'rescale'; to: number; reason: string };

const pct = (x: number): string => `${Math.round(100 * x)}%`;

/** Look at a sample; returns the decision and updates `state.signal` (the caller records a rescale it makes). */
export function decideAutoscale(p: AutoscalePolicy, state: AutoscaleState, s: AutoscaleSample): AutoscaleDecision {
  const pressured = s.maxBackpressure >= p.backpressureHigh || s.maxBusy >= p.busyHigh;
  const lagging = s.sourceLag >= p.lagHigh;
  const kind = pressured || lagging ? 'out' : s.maxBackpressure < 0.05 && s.maxBusy <= p.busyLow ? 'in' : undefined;
  if (!kind) {
    delete state.signal;
    return { action: 'none' };
  }
  if (state.signal?.kind !== kind) state.signal = { kind, since: s.at, lag: s.sourceLag };
  const held = s.at - state.signal.since;
  if (held < p.sustainMs) return { action: 'none' };
  if (kind === 'out' && !pressured && s.sourceLag < state.signal.lag) {
    // Lagging but catching up: watch again from here.
    state.signal = { kind, since: s.at, lag: s.sourceLag };
    return { action: 'none' };
  }
  const to = kind === 'out' ? Math.min(p.max, s.parallelism * 2) : Math.max(p.min, Math.ceil(s.parallelism / 2));
  const secs = Math.round(held / 1000);
  // Every signal that holds is named: sources behind their input tell the user what they see, a busy
  // or backpressured task why (which shows first on a loaded machine is not the point).
  const pressure =
    s.maxBackpressure >= p.backpressureHigh
      ? `task ${s.backpressuredTask} backpressured ${pct(s.maxBackpressure)} of the time for ${secs} s`
      : pressured
        ? `task ${s.busiestTask} busy ${pct(s.maxBusy)} of the time for ${secs} s`
        : undefined;
  const lag = lagging
    ? `sources ${s.sourceLag} records behind their input${pressure ? '' : `, not catching up for ${secs} s`}`
    : undefined;
  const why =
    kind === 'out'
      ? [pressure, lag].filter((x) => x !== undefined).join(', and ')
      : `no task busier than ${pct(s.maxBusy)} (${s.busiestTask}) for ${secs} s`;
  if (to === s.parallelism)
    return {
      action: 'hold',
      limit: 'bound',
      reason: `${why}, but the job is at its ${kind === 'out' ? 'maximum' : 'minimum'} parallelism ${s.parallelism}`,
    };
  if (s.at - state.lastChangeAt < p.cooldownMs)
    return {
      action: 'hold',
      limit: 'cooldown',
      reason: `${why}, but the last change was ${Math.round((s.at - state.lastChangeAt) / 1000)} s ago (cool-down ${Math.round(p.cooldownMs / 1000)} s)`,
    };
  const recent = state.changes.filter((t) => s.at - t < 3_600_000).length;
  if (recent >= p.maxChangesPerHour)
    return { action: 'hold', limit: 'rate', reason: `${why}, but ${recent} changes in the last hour is the limit` };
  return { action: 'rescale', to, reason: `${why}: scale ${kind} ${s.parallelism} -> ${to}` };
}

/** A rescale it asked for was carried out (or refused: the cool-down still applies, so it does not retry at once). */
export function recordAutoscale(state: AutoscaleState, at: number): void {
  state.lastChangeAt = at;
  state.changes = [...state.changes.filter((t) => at - t < 3_600_000), at];
  delete state.signal;
}

// ---------------------------------------------------------------- a job's autoscaler

/** A decision made and what came of it, as the job's API shows it (newest last). */
export interface AutoscaleRecord {
  at: number;
  action: 'rescale' | 'hold';
  /** For a hold: what held it. */
  limit?: AutoscaleLimit;
  reason: string;
  /** For a rescale: `rescaled` or why it was refused. */
  outcome?: string;
}

/** A job's autoscaler: its bounds and policy, what it remembers, and its decisions. */
export interface JobAutoscale {
  policy: AutoscalePolicy;
  state: AutoscaleState;
  decisions: AutoscaleRecord[];
  /** When it last looked. */
  sampledAt: number;
  /** A rescale it asked for is under way. */
  busy: boolean;
}

/** Decisions kept per job. */
const DECISIONS_KEPT = 50;
/** How often a job is looked at (heartbeats come every 500 ms; the signal must hold for sustainMs anyway). */
export const AUTOSCALE_SAMPLE_MS = 1_000;

export function newJobAutoscale(
  bounds: { min: number; max: number },
  tuning: Partial<Pick<AutoscalePolicy, 'sustainMs' | 'cooldownMs' | 'maxChangesPerHour' | 'lagHigh'>>,
  now: number,
): JobAutoscale {
  return {
    policy: { ...DEFAULT_AUTOSCALE_POLICY, ...tuning, ...bounds },
    state: { lastChangeAt: now, changes: [] },
    decisions: [],
    sampledAt: 0,
    busy: false,
  };
}

/** Keep a decision; a hold only when another limit held the last one (a held signal is not logged every second). */
export function keepDecision(a: JobAutoscale, r: AutoscaleRecord): boolean {
  const last = a.decisions.at(-1);
  if (r.action === 'hold' && last?.action === 'hold' && last.limit === r.limit) return false;
  a.decisions.push(r);
  if (a.decisions.length > DECISIONS_KEPT) a.decisions.shift();
  return true;
}

/** A look at a running job whose every subtask has reported twice; undefined until then. */
export function sampleJob(job: JobState, now: number): AutoscaleSample | undefined {
  const s: AutoscaleSample = {
    at: now,
    parallelism: job.spec.defaultParallelism,
    maxBackpressure: 0,
    maxBusy: 0,
    sourceLag: 0,
    backpressuredTask: '',
    busiestTask: '',
  };
  for (const t of job.plan.tasks) {
    const m = taskMetrics(job, t.id, t.parallelism);
    if (m.measured < t.parallelism) return undefined;
    s.sourceLag += m.lagRecords;
    if (m.backpressure >= s.maxBackpressure) [s.maxBackpressure, s.backpressuredTask] = [m.backpressure, t.name];
    if (m.busy >= s.maxBusy) [s.maxBusy, s.busiestTask] = [m.busy, t.name];
  }
  return s;
}

export interface AutoscalersDeps {
  log: Logger;
  clock: Clock;
  /** Rescale the job's parallelism to `to` (the Rescaler), naming why. */
  rescale: (job: JobState, to: number, cause: string) => Promise<RescaleOutcome>;
}

/** Every job's autoscaler, looked at on the coordinator's sweep. */
export class Autoscalers {
  constructor(private readonly deps: AutoscalersDeps) {}

  tick(jobs: Iterable<JobState>, now: number): void {
    for (const job of jobs) {
      const a = job.autoscale;
      if (!a || a.busy || job.state !== 'RUNNING' || now - a.sampledAt < AUTOSCALE_SAMPLE_MS) continue;
      a.sampledAt = now;
      // A rescale by anyone starts the cool-down.
      const rescaled = job.rescales.at(-1)?.runningAt;
      if (rescaled !== undefined && rescaled > a.state.lastChangeAt) a.state.lastChangeAt = rescaled;
      const sample = sampleJob(job, now);
      if (!sample) continue;
      const d = decideAutoscale(a.policy, a.state, sample);
      if (d.action === 'hold') {
        if (keepDecision(a, { at: now, action: 'hold', limit: d.limit, reason: d.reason }))
          this.deps.log.info({ jobId: job.id }, `job ${job.id} autoscaler: ${d.reason}`);
      } else if (d.action === 'rescale') this.rescale(job, a, d.to, d.reason, now);
    }
  }

  private rescale(job: JobState, a: JobAutoscale, to: number, reason: string, now: number): void {
    const record: AutoscaleRecord = { at: now, action: 'rescale', reason };
    keepDecision(a, record);
    recordAutoscale(a.state, now);
    a.busy = true;
    this.deps.log.info({ jobId: job.id }, `job ${job.id} autoscaler: ${reason}`);
    this.deps
      .rescale(job, to, `autoscaler: ${reason}`)
      .then((r) => {
        record.outcome = r.ok ? 'rescaled' : r.message;
        if (!r.ok) this.deps.log.warn({ jobId: job.id }, `job ${job.id} autoscaler: ${r.message}`);
      })
      .catch((err: unknown) => {
        record.outcome = (err as Error).message;
      })
      .finally(() => {
        a.busy = false;
        a.state.lastChangeAt = this.deps.clock.now();
      });
  }
}
