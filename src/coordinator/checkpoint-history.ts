/** What a job's checkpoints came to: the latest completed (the API's history), how many in all, the latest aborted. */
import type { CheckpointFailure, CompletedCheckpoint } from './checkpoint-ports.js';

/** Completed checkpoints listed per job. */
const CHECKPOINTS_LISTED = 100;

export class CheckpointHistory {
  private readonly latest: CompletedCheckpoint[] = [];
  private count = 0;
  private failure: CheckpointFailure | undefined;

  /** The latest completed checkpoints (up to CHECKPOINTS_LISTED), newest last. */
  get recent(): readonly CompletedCheckpoint[] {
    return this.latest;
  }

  /** Checkpoints (of every kind) completed in all. */
  get completed(): number {
    return this.count;
  }

  /** The latest completed checkpoint's id (0: none). */
  get lastId(): number {
    return this.latest.at(-1)?.checkpointId ?? 0;
  }

  get lastCompletedAt(): number | undefined {
    return this.latest.at(-1)?.completedAtMs;
  }

  /** The latest checkpoint aborted: why (a typed reason) and what happened. */
  get lastAborted(): CheckpointFailure | undefined {
    return this.failure;
  }

  add(c: CompletedCheckpoint): void {
    this.latest.push(c);
    if (this.latest.length > CHECKPOINTS_LISTED) this.latest.shift();
    this.count++;
  }

  aborted(f: CheckpointFailure): void {
    this.failure = f;
  }
}
