/**
 * What a subtask's loop (source-loop.ts, input-loop.ts) asks of its SubtaskRunner, and what the runner
 * asks of its loop: the runner owns the lifecycle, checkpoints and the waits between batches; a loop
 * owns where records come from and where barriers wait.
 */
import type { InflightCapture } from './inflight.js';
import type { SubtaskSetup } from './subtask-runner.js';
import type { WaitClock } from './wait-clock.js';

/** How a checkpoint is taken here: its alignment's length, or unaligned (with the records in flight, at a task with inputs). */
export interface BarrierOptions {
  alignmentMs?: number;
  /** When the first barrier was taken (the subtask's clock). @default now */
  barrierAt?: number;
  unaligned?: boolean;
  capture?: InflightCapture;
}

/** The runner's side, as a loop uses it. */
export interface LoopHost {
  readonly setup: SubtaskSetup;
  /** Waits for input (a source: for a read that had nothing yet, or was paced). */
  readonly idle: WaitClock;
  /** Pre-commit, snapshot, and send the barrier on. */
  checkpoint(checkpointId: number, o?: BarrierOptions): Promise<void>;
  /** After each piece of work: flushes, waits for room, yields. */
  afterBatch(): Promise<void>;
  /** The task is about to wait: partly filled batches leave. */
  beforeWait(): void;
  /** Await user or connector work, but stop waiting when the job is cancelled. */
  bounded<T>(value: T | Promise<T>): T | Promise<T>;
  /** `p`, or undefined once a barrier wakes the wait (wake). */
  wakeable<T>(p: Promise<T>): Promise<T | undefined>;
  /** Wake a wait that barriers may interrupt. */
  wake(): void;
}

/** A subtask's loop, as its runner uses it. */
export interface TaskLoop {
  /** Records taken in: a source's read, a task's processed. */
  readonly recordsIn: number;
  run(): Promise<void>;
  /** Take the barriers that need no room downstream (a task waiting for room takes them meanwhile). */
  takeBarriers(): Promise<void>;
  /** Such a barrier waits to be taken. */
  readonly barrierWaiting: boolean;
  /** Aligned checkpoint `checkpointId`, not yet taken here, becomes unaligned. */
  convert(checkpointId: number): void;
  /** Checkpoint `checkpointId` was aborted. */
  abort(checkpointId: number): void;
}
