/**
 * Live progress of one job on standard error, for `clink run` and `clink submit --wait`: on a terminal
 * one line redrawn in place (records and rates, checkpoints, restarts), with a line of its own for each
 * restart; otherwise plain lines, one when something happens (a restart, a retry) or every
 * `plainIntervalMs`, so a log file gets a readable record rather than carriage returns.
 */
import { isRedeployingJobState } from '../protocol/index.js';

/** A job's counters at one moment, as the coordinator reports them. */
export interface JobProgressSample {
  state: string;
  sourceRecords: number;
  sinkRecords: number;
  checkpointsCompleted: number;
  lastCheckpointId: number;
  restarts: number;
  lastRestartCause: string;
  retries: number;
}

export interface ProgressOutput {
  write(text: string): unknown;
}

export interface ProgressDisplayOptions {
  /** Redraw one line in place (a terminal), or print plain lines. */
  tty: boolean;
  now?: () => number;
  /** Plain mode: the longest gap between lines while nothing happens. @default 10 s */
  plainIntervalMs?: number;
  /** Rates are over the samples of this window. @default 3 s */
  rateWindowMs?: number;
}

const fmt = new Intl.NumberFormat('en-US');
const CLEAR_LINE = '\r\x1b[2K';

export class ProgressDisplay {
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly plainIntervalMs: number;
  private readonly rateWindowMs: number;
  private readonly window: { at: number; in: number; out: number }[] = [];
  private last: JobProgressSample | undefined;
  private lastPlainAt: number;
  private drawn = false;

  constructor(
    private readonly out: ProgressOutput,
    private readonly name: string,
    private readonly o: ProgressDisplayOptions,
  ) {
    this.now = o.now ?? (() => performance.now());
    this.startedAt = this.now();
    this.lastPlainAt = this.startedAt;
    this.plainIntervalMs = o.plainIntervalMs ?? 10_000;
    this.rateWindowMs = o.rateWindowMs ?? 3_000;
  }

  /** A new sample: redraw, or print a line if something happened or the interval is up. */
  show(s: JobProgressSample): void {
    const t = this.now();
    this.window.push({ at: t, in: s.sourceRecords, out: s.sinkRecords });
    while (this.window.length > 2 && t - this.window[1]!.at >= this.rateWindowMs) this.window.shift();
    const prev = this.last;
    this.last = s;
    const restarted = prev !== undefined && s.restarts > prev.restarts;
    const retried = prev !== undefined && s.retries > prev.retries;
    if (this.o.tty) {
      if (restarted)
        this.out.write(`${CLEAR_LINE}[clink] ${this.name}  restart ${s.restarts}: ${s.lastRestartCause}\n`);
      this.out.write(CLEAR_LINE + this.line(s, t));
      this.drawn = true;
      return;
    }
    const redeploying = isRedeployingJobState;
    const stateTurned =
      prev !== undefined && prev.state !== s.state && (redeploying(prev.state) || redeploying(s.state));
    if (restarted || retried || stateTurned || t - this.lastPlainAt >= this.plainIntervalMs) {
      this.lastPlainAt = t;
      this.out.write(this.line(s, t) + (restarted ? `  (restart: ${s.lastRestartCause})` : '') + '\n');
    }
  }

  /** The job ended: its last line, left on the screen. */
  end(s: JobProgressSample | undefined): void {
    const final = s ?? this.last;
    if (!final) return;
    const t = this.now();
    this.out.write(this.o.tty ? `${CLEAR_LINE}${this.line(final, t, false)}\n` : `${this.line(final, t, false)}\n`);
    this.drawn = false;
  }

  /** Other output is about to be written: end the line being redrawn. */
  breakLine(): void {
    if (this.o.tty && this.drawn) this.out.write('\n');
    this.drawn = false;
  }

  private line(s: JobProgressSample, t: number, rates = true): string {
    const elapsed = ((t - this.startedAt) / 1000).toFixed(1);
    const first = this.window[0];
    const span = first ? (t - first.at) / 1000 : 0;
    const rate = (n: number, from: number): string =>
      rates && span > 0 ? ` (${fmt.format(Math.max(0, Math.round((n - from) / span)))}/s)` : '';
    const parts = [
      `[clink] ${this.name}`,
      s.state,
      `${elapsed}s`,
      `in ${fmt.format(s.sourceRecords)} records${rate(s.sourceRecords, first?.in ?? 0)}`,
      `out ${fmt.format(s.sinkRecords)} records${rate(s.sinkRecords, first?.out ?? 0)}`,
    ];
    if (s.checkpointsCompleted > 0) parts.push(`checkpoints ${s.checkpointsCompleted} (last ${s.lastCheckpointId})`);
    if (s.restarts > 0) parts.push(`restarts ${s.restarts}`);
    if (s.retries > 0) parts.push(`retries ${s.retries}`);
    return parts.join('  ');
  }
}

/**
 * Sample `read` every `everyMs` into `display` until the returned stop is called; a read that fails
 * (a lost connection) shows nothing and is tried again. Reads never overlap.
 */
export function followProgress(
  display: ProgressDisplay,
  read: () => JobProgressSample | undefined | Promise<JobProgressSample | undefined>,
  everyMs: number,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
    try {
      const s = await read();
      if (s && !stopped) display.show(s);
    } catch {
      // The outcome, or the loss of the connection, is reported by the caller.
    }
    if (!stopped) timer = setTimeout(() => void tick(), everyMs);
  };
  timer = setTimeout(() => void tick(), everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
