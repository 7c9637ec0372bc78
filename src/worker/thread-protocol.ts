/** What a worker's session and its job threads say to each other (structured clone, plus shared memory). */
import type { Message, SubtaskProgressReport } from '../protocol/index.js';

/** Int32 slots of a job thread's status buffer. */
export const STATUS_TICKS = 0;
export const STATUS_PHASE = 1;
export const STATUS_SUBTASK = 2;
export const STATUS_SLOTS = 3;
/** How often a live job thread ticks. */
export const THREAD_TICK_MS = 100;
/** How long a new job thread may take to boot (to its first tick) before the stall watchdog judges it. */
export const THREAD_BOOT_TIMEOUT_MS = 30_000;
/** A job thread posts its subtasks' counts every this many ticks (about a heartbeat's interval). */
export const PROGRESS_EVERY_TICKS = 5;

export type ToThread =
  /** A warm thread is given its job (before the job's first frame). */
  | { kind: 'assign'; jobId: string }
  /** Its job is done here: it waits, warm, for the next one. */
  | { kind: 'release' }
  | { kind: 'frame'; frame: Message }
  | { kind: 'cancel'; reason: string }
  | { kind: 'metrics'; id: number }
  | { kind: 'close' };

export type FromThread =
  | { kind: 'send'; message: Message }
  /** The subtask named `key` (its chain, index and key) reports its phase under `ordinal` from now on. */
  | { kind: 'subtask'; ordinal: number; key: string }
  | { kind: 'metrics'; id: number; json: object[] }
  /** Each running subtask's counts, every PROGRESS_EVERY_TICKS ticks. */
  | { kind: 'progress'; subtasks: SubtaskProgressReport[] }
  /** Every subtask of `jobId` deployed to the thread has ended and reported. */
  | { kind: 'done'; jobId: string }
  /** The thread's data server listens on `port` (its subtasks' channels come in there). */
  | { kind: 'listening'; port: number };
