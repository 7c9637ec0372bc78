/**
 * The entry of a job thread (see job-thread.ts): one JobHost, with a DataServer and metrics of its
 * own, fed the job's frames by the worker's session over the thread's port. It proves it is alive by
 * a tick in shared memory that the session's watchdog reads, and says there what each subtask is
 * doing, so a thread stuck in user code is found, named and terminated without its cooperation.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DataServer } from '../dataplane/index.js';
import { createLogger } from '../log/index.js';
import { ClinkMetrics } from '../metrics/index.js';
import type { Message } from '../protocol/index.js';
import { JobHost, type JobFrame, type JobHostConfig } from './job-host.js';
import {
  PROGRESS_EVERY_TICKS,
  STATUS_PHASE,
  STATUS_SUBTASK,
  STATUS_TICKS,
  THREAD_TICK_MS,
  type FromThread,
  type ToThread,
} from './thread-protocol.js';
import { subtaskKey } from '../plan/index.js';

export interface JobThreadData {
  config: JobHostConfig;
  dataHost: string;
  logLevel: string;
  /** Int32: ticks, phase, subtask ordinal (see thread-protocol.ts). */
  status: SharedArrayBuffer;
  /** Float64: source records, sink records. */
  progress: SharedArrayBuffer;
}

const data = workerData as JobThreadData;
const port = parentPort!;
const status = new Int32Array(data.status);
const progress = new Float64Array(data.progress);
const post = (m: FromThread): void => port.postMessage(m);

const root = createLogger({ name: 'worker', level: data.logLevel }).child({
  component: 'worker.job',
  workerId: data.config.workerId,
});
const metrics = new ClinkMetrics();
const server = await DataServer.start({
  host: data.dataHost,
  log: root,
  metrics,
  ...(data.config.tls?.server ? { tls: data.config.tls.server } : {}),
  ...(data.config.dataTransport ? { transport: data.config.dataTransport } : {}),
  ...(data.config.maxInflightFrameBytes ? { maxInflightFrameBytes: data.config.maxInflightFrameBytes } : {}),
});
post({ kind: 'listening', port: server.port });
const ordinals = new Map<string, number>();

/** A subtask's ordinal in the shared status, told to the session (with its description) when new. */
function ordinalOf(taskId: string, index: number): number {
  const key = subtaskKey(taskId, index);
  let ordinal = ordinals.get(key);
  if (ordinal === undefined) {
    ordinals.set(key, (ordinal = ordinals.size));
    post({ kind: 'subtask', ordinal, key: host?.describeSubtask(taskId, index) ?? key });
  }
  return ordinal;
}

/**
 * What a subtask is doing, in shared memory, for the session's stall watchdog: its ordinal is found on
 * its first report and kept, since it reports per batch.
 */
function phaseReporter(taskId: string, index: number): (phase: number) => void {
  let ordinal = -1;
  return (phase) => {
    if (ordinal < 0) ordinal = ordinalOf(taskId, index);
    Atomics.store(status, STATUS_SUBTASK, ordinal);
    Atomics.store(status, STATUS_PHASE, phase);
  };
}

/** The job this thread runs: a thread starts warm, with none, and is given one (`assign`) before its first Deploy. */
let host: JobHost | undefined;
function assign(jobId: string): JobHost {
  return new JobHost(jobId, data.config, {
    data: server,
    log: root.child({ jobId }),
    metrics,
    stdout: (text) => void process.stdout.write(text),
    send: (message: Message) => post({ kind: 'send', message }),
    onFinished: () => post({ kind: 'done', jobId }),
    phaseReporter,
  });
}

// The liveness tick: it stops only when the thread's event loop does (user code spinning in a batch).
let ticks = 0;
const tick = setInterval(() => {
  Atomics.add(status, STATUS_TICKS, 1);
  if (!host) return;
  const p = host.progress();
  progress[0] = p.sourceRecords;
  progress[1] = p.sinkRecords;
  if (++ticks % PROGRESS_EVERY_TICKS === 0) post({ kind: 'progress', subtasks: p.subtasks });
}, THREAD_TICK_MS);

// One frame at a time, in order, as the session's FIFO dispatch would.
let chain: Promise<void> = Promise.resolve();
port.on('message', (m: ToThread) => {
  switch (m.kind) {
    case 'assign':
      host = assign(m.jobId);
      return;
    case 'release':
      // Kept warm for the next job (its JIT-compiled engine code with it); this job's frames are over.
      host = undefined;
      ordinals.clear();
      return;
    case 'frame': {
      const h = host!;
      chain = chain
        .then(() => h.handle(m.frame as JobFrame))
        .catch((err: unknown) =>
          root.error({ err }, `job thread: handling ${m.frame.type} failed: ${(err as Error).message}`),
        );
      return;
    }
    case 'cancel':
      host?.cancelAll(m.reason);
      return;
    case 'metrics':
      void metrics.registry.getMetricsAsJSON().then((json) => post({ kind: 'metrics', id: m.id, json }));
      return;
    case 'close':
      // Ends this thread only: its job is done here.
      clearInterval(tick);
      void server.close().finally(() => process.exit(0));
      return;
  }
});
