/**
 * Where a job's frames go on a worker: a JobThread (user code isolated in a worker thread, the
 * default) or an InProcessJob (task isolation off: the JobHost on the session's event loop). The
 * session treats both alike.
 */
import type { Message } from '../protocol/index.js';
import { JobHost, type JobFrame, type JobHostConfig, type JobHostDeps } from './job-host.js';
import type { JobProgressReport } from './deployed-job.js';

export interface JobRunner {
  readonly jobId: string;
  /** A subtask here has not reported its end yet. */
  readonly running: boolean;
  post(frame: Message): void;
  cancel(reason: string): void;
  progress(): JobProgressReport;
  /** The stall watchdog's look (a thread only). */
  check(now: number): void;
  metrics(): Promise<object[]>;
  /** Cancel what runs and end, waiting up to `graceMs` for subtasks to report. */
  close(reason: string, graceMs: number): Promise<void>;
}

export class InProcessJob implements JobRunner {
  private readonly host: JobHost;
  private chain: Promise<void> = Promise.resolve();
  private ended = false;

  constructor(
    readonly jobId: string,
    config: JobHostConfig,
    deps: JobHostDeps,
    private readonly onExit: (r: JobRunner) => void,
  ) {
    this.host = new JobHost(jobId, config, { ...deps, onFinished: () => this.end() });
  }

  get running(): boolean {
    return this.host.running;
  }

  post(frame: Message): void {
    // In order, one at a time: the caller is the session's FIFO dispatch already, but handle() awaits.
    this.chain = this.chain.then(() => this.host.handle(frame as JobFrame));
  }

  cancel(reason: string): void {
    this.host.cancelAll(reason);
  }

  progress(): JobProgressReport {
    return this.host.progress();
  }

  check(): void {}

  metrics(): Promise<object[]> {
    return Promise.resolve([]);
  }

  async close(reason: string): Promise<void> {
    this.cancel(reason);
    await this.chain.catch(() => undefined);
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onExit(this);
  }
}
