/**
 * The local runtime on a thread of its own under a job thread's V8 limits (the worker's defaults for
 * --task-heap-mb and --task-young-generation-mb), so that a cluster's run and its in-process reference
 * differ by what crossing processes costs and not by the heap they allocate in. The thread stays up
 * between runs, warm like a worker's job thread.
 */
import { fileURLToPath } from 'node:url';
import { extname } from 'node:path';
import type { Worker as Thread } from 'node:worker_threads';
import { startThread } from '../src/util/index.js';
import { DEFAULT_WORKER_CONFIG } from '../src/worker/index.js';

const ENTRY = new URL(`./local-thread-entry${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export interface LocalThreadRun {
  recordsPerSec: number;
  cpuSecondsPerMillion: number;
}

export class LocalThread {
  private constructor(private readonly thread: Thread) {}

  /** A thread that runs the job of `file` (loaded once). */
  static start(file: string): LocalThread {
    const thread = startThread(ENTRY, {
      workerData: { file },
      resourceLimits: {
        maxOldGenerationSizeMb: DEFAULT_WORKER_CONFIG.taskHeapMb,
        maxYoungGenerationSizeMb: DEFAULT_WORKER_CONFIG.taskYoungGenerationMb,
      },
    });
    return new LocalThread(thread);
  }

  /** One run of `events` events at `parallelism`; CPU is the whole process's while it ran. */
  run(events: number, parallelism = 1): Promise<LocalThreadRun> {
    return new Promise((resolve, reject) => {
      const done = (m: LocalThreadRun | { error: string }): void => {
        this.thread.off('error', reject);
        if ('error' in m) reject(new Error(m.error));
        else resolve(m);
      };
      this.thread.once('message', done);
      this.thread.once('error', reject);
      this.thread.postMessage({ events, parallelism });
    });
  }

  /** End the thread: it closes its port and returns once its loop is empty (nothing left running). */
  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.thread.once('exit', resolve));
    this.thread.postMessage('close');
    await exited;
  }
}
