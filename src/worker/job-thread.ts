/**
 * JobThread: the session's handle on one job's thread (design record 011). The session posts it the
 * job's frames and sends what it posts back; user code runs there, never on the session's event loop.
 *
 * A watchdog reads the thread's liveness tick from shared memory: a thread whose tick has not moved
 * for the stall timeout (user code that never returns to the event loop) is terminated, and every
 * subtask it ran is reported as a fatal failure naming it and what it was doing. A thread that dies
 * (out of its heap limit, or any uncaught error) has its subtasks reported failed the same way, with
 * the cause; the worker process and its other jobs run on.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ResourceLimits, Worker as Thread } from 'node:worker_threads';
import type { Logger } from '../log/index.js';
import { makeMessage, type Message, type SubtaskProgressReport } from '../protocol/index.js';
import { PHASE_DESCRIPTIONS } from '../runtime/index.js';
import { setTimer, startThread } from '../util/index.js';
import type { JobHostConfig } from './job-host.js';
import type { JobProgressReport } from './deployed-job.js';
import type { JobThreadData } from './thread-entry.js';
import {
  STATUS_PHASE,
  STATUS_SLOTS,
  STATUS_SUBTASK,
  STATUS_TICKS,
  THREAD_BOOT_TIMEOUT_MS,
  type FromThread,
  type ToThread,
} from './thread-protocol.js';
import { subtaskKey } from '../plan/index.js';
import { removeThreadStateDir } from '../state/index.js';

/** The entry file beside this one, with this file's extension (.js built, .ts under tsx). */
const EXT = extname(fileURLToPath(import.meta.url));
const ENTRY = new URL(`./thread-entry${EXT}`, import.meta.url);

export interface JobThreadOptions {
  config: JobHostConfig;
  dataHost: string;
  /** A thread whose tick stalls this long is terminated; its subtasks fail fatally. */
  stallTimeoutMs: number;
  /** When it was started, on the clock the stall watchdog's checks read. */
  startedAt: number;
  /** The thread's V8 old-generation heap limit (resourceLimits.maxOldGenerationSizeMb). */
  heapMb: number;
  /** The thread's V8 young generation (resourceLimits.maxYoungGenerationSizeMb): where records are born and most die. */
  youngGenerationMb: number;
  log: Logger;
  /** Sends a frame to the coordinator. */
  send: (m: Message) => void;
  /**
   * Its job is done here: the session forgets the job's runner, and says whether it keeps this thread
   * warm for the next job (true) or lets it end.
   */
  onIdle: (t: JobThread) => boolean;
  /** The thread has ended (its job done here, or it failed). */
  onExit: (t: JobThread) => void;
  /** Its data server listens (on `dataPort`). */
  onListening?: (t: JobThread) => void;
}

/**
 * The stall watchdog's verdict on a thread at `now`: its tick counter moved (`ticked`), it has not yet
 * for less than its bound (`waiting`), or it has been still too long. Until its first tick the thread is
 * still booting (loading the engine, compiling under load): no user code has run, so the stall bound
 * does not apply; a boot gets THREAD_BOOT_TIMEOUT_MS at least.
 */
export function judgeStall(
  s: { ticks: number; lastTicks: number; lastTickAt: number },
  now: number,
  stallTimeoutMs: number,
): 'ticked' | 'waiting' | 'boot-timeout' | 'stalled' {
  if (s.ticks !== s.lastTicks) return 'ticked';
  const still = now - s.lastTickAt;
  if (s.ticks === 0) return still < Math.max(THREAD_BOOT_TIMEOUT_MS, stallTimeoutMs) ? 'waiting' : 'boot-timeout';
  return still < stallTimeoutMs ? 'waiting' : 'stalled';
}

export class JobThread {
  private readonly thread: Thread;
  private readonly status = new Int32Array(new SharedArrayBuffer(STATUS_SLOTS * 4));
  private readonly progressView = new Float64Array(new SharedArrayBuffer(16));
  private subtaskProgress: SubtaskProgressReport[] = [];
  /** Subtasks deployed to the thread and not yet reported finished (`<task>#<index>`). */
  private readonly open = new Set<string>();
  /** The subtask behind each ordinal the thread reports its phase under. */
  private readonly ordinals = new Map<number, string>();
  private readonly metricsWaiters = new Map<number, (json: object[]) => void>();
  private metricsSeq = 0;
  private lastTicks = -1;
  private lastTickAt: number;
  private ended = false;
  private failure: string | undefined;
  /** The failure is the stall watchdog's: deterministic enough to fail the job rather than restart it. */
  private stalled = false;
  private closeTimer: NodeJS.Timeout | undefined;
  /** The job it runs, once assigned; a warm thread waits for one with the engine already loaded. */
  private job = '';
  /** The port its data server listens on (0 until it does). */
  dataPort = 0;
  readonly exited: Promise<void>;
  /** The thread's id, kept: a thread that exited reports -1. */
  private readonly threadId: number;

  constructor(private readonly o: JobThreadOptions) {
    this.lastTickAt = o.startedAt;
    const workerData: JobThreadData = {
      config: o.config,
      dataHost: o.dataHost,
      logLevel: o.log.level,
      status: this.status.buffer as SharedArrayBuffer,
      progress: this.progressView.buffer as SharedArrayBuffer,
    };
    this.thread = startThread(ENTRY, {
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: o.heapMb, maxYoungGenerationSizeMb: o.youngGenerationMb },
    });
    this.threadId = this.thread.threadId;
    this.thread.on('message', (m: FromThread) => this.onMessage(m));
    this.thread.on('error', (err: Error & { code?: string }) => {
      this.failure =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `out of memory (limit ${o.heapMb} MB, --task-heap-mb): the job's thread on worker ${o.config.workerId} exhausted its heap`
          : `the job's thread on worker ${o.config.workerId} failed: ${err.message}`;
    });
    this.exited = new Promise((resolve) => this.thread.once('exit', () => resolve()));
    void this.exited.then(() => this.onThreadExit());
  }

  /** The V8 limits the thread runs under (empty once it has ended). */
  get resourceLimits(): ResourceLimits {
    return this.thread.resourceLimits ?? {};
  }

  get jobId(): string {
    return this.job;
  }

  /** Give this (warm) thread its job; its frames follow. */
  assign(jobId: string): this {
    this.job = jobId;
    // A reused thread's counts were its last job's.
    this.progressView.fill(0);
    this.subtaskProgress = [];
    this.postToThread({ kind: 'assign', jobId });
    return this;
  }

  /** Records read by its sources and written by its sinks so far (written by the thread at each tick), and its subtasks' last report. */
  progress(): JobProgressReport {
    return { sourceRecords: this.progressView[0]!, sinkRecords: this.progressView[1]!, subtasks: this.subtaskProgress };
  }

  get running(): boolean {
    return !this.ended && this.open.size > 0;
  }

  post(frame: Message): void {
    if (this.ended) return;
    if (frame.type === 'Deploy') for (const t of frame.tasks) this.open.add(subtaskKey(t.taskId, t.subtaskIndex));
    this.postToThread({ kind: 'frame', frame });
  }

  cancel(reason: string): void {
    this.postToThread({ kind: 'cancel', reason });
  }

  /** The thread's metrics (prom-client JSON), or none if it does not answer within a second. */
  metrics(): Promise<object[]> {
    if (this.ended) return Promise.resolve([]);
    const id = ++this.metricsSeq;
    return new Promise((resolve) => {
      const t = setTimer(() => {
        this.metricsWaiters.delete(id);
        resolve([]);
      }, 1_000);
      this.metricsWaiters.set(id, (json) => {
        clearTimeout(t);
        resolve(json);
      });
      this.postToThread({ kind: 'metrics', id });
    });
  }

  /** The watchdog's look: terminate the thread if its tick has not moved for the stall timeout. */
  check(now: number): void {
    if (this.ended) return;
    const ticks = Atomics.load(this.status, STATUS_TICKS);
    const verdict = judgeStall(
      { ticks, lastTicks: this.lastTicks, lastTickAt: this.lastTickAt },
      now,
      this.o.stallTimeoutMs,
    );
    if (verdict === 'ticked') {
      this.lastTicks = ticks;
      this.lastTickAt = now;
    }
    if (verdict === 'ticked' || verdict === 'waiting') return;
    const stalled = now - this.lastTickAt;
    const subtask = this.ordinals.get(Atomics.load(this.status, STATUS_SUBTASK)) ?? 'a subtask';
    const doing = PHASE_DESCRIPTIONS[Atomics.load(this.status, STATUS_PHASE)] ?? 'starting';
    this.failure =
      ticks === 0
        ? `the job thread on worker ${this.o.config.workerId} did not boot within ${stalled} ms (the machine is overloaded?); it was terminated`
        : `subtask ${subtask} made no progress for ${stalled} ms while ${doing} (user code that never returns?); its thread on worker ${this.o.config.workerId} was terminated (--task-stall-timeout-ms ${this.o.stallTimeoutMs})`;
    this.stalled = true;
    this.o.log.error({ jobId: this.job, subtask }, `job ${this.job}: ${this.failure}`);
    void this.thread.terminate();
  }

  /** Cancel what runs and end the thread once it has reported (or after `graceMs`). */
  async close(reason: string, graceMs: number): Promise<void> {
    if (!this.ended) {
      if (this.open.size > 0) this.cancel(reason);
      else this.postToThread({ kind: 'close' });
      // Whatever holds it (subtasks that do not stop, a boot that never finishes), it ends by then.
      this.closeTimer = setTimer(() => {
        this.o.log.warn(
          { jobId: this.job },
          `job ${this.job}: its thread did not end within ${graceMs} ms of being told to stop (${reason}); terminated`,
        );
        void this.thread.terminate();
      }, graceMs);
    }
    await this.exited;
  }

  private postToThread(m: ToThread): void {
    if (!this.ended) this.thread.postMessage(m);
  }

  private onMessage(m: FromThread): void {
    switch (m.kind) {
      case 'send':
        if (m.message.type === 'SubtaskFinished')
          this.open.delete(subtaskKey(m.message.taskId, m.message.subtaskIndex));
        this.o.send(m.message);
        return;
      case 'subtask':
        this.ordinals.set(m.ordinal, m.key);
        return;
      case 'progress':
        // A report posted before a release belongs to the last job: only this job's subtasks count.
        this.subtaskProgress = m.subtasks.filter((s) => s.jobId === this.job);
        return;
      case 'metrics':
        this.metricsWaiters.get(m.id)?.(m.json);
        this.metricsWaiters.delete(m.id);
        return;
      case 'listening':
        this.dataPort = m.port;
        this.o.onListening?.(this);
        return;
      case 'done':
        // Sent after the last report and the last state file: nothing the thread does for the job is left.
        if (m.jobId !== this.job || this.open.size > 0) return;
        if (this.o.onIdle(this)) {
          this.job = '';
          this.ordinals.clear();
          this.postToThread({ kind: 'release' });
        } else this.postToThread({ kind: 'close' });
        return;
    }
  }

  /** The thread ended: whatever it had not reported fails with the cause (fatal when it stalled). */
  private onThreadExit(): void {
    this.ended = true;
    // Disk state the thread could not close (terminated on a stall, out of memory) goes with it.
    removeThreadStateDir(this.o.config.localStateDir ?? '', this.threadId);
    clearTimeout(this.closeTimer);
    for (const w of this.metricsWaiters.values()) w([]);
    this.metricsWaiters.clear();
    const fatal = this.stalled;
    const error =
      this.failure ?? `the job's thread on worker ${this.o.config.workerId} ended before its subtasks reported`;
    for (const key of this.open) {
      const at = key.lastIndexOf('#');
      this.o.send(
        makeMessage('SubtaskFinished', {
          jobId: this.job,
          taskId: key.slice(0, at),
          subtaskIndex: Number(key.slice(at + 1)),
          ok: false,
          error,
          fatal,
        }),
      );
    }
    this.open.clear();
    this.o.onExit(this);
  }
}
