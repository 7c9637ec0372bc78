/**
 * What every frame reader of one node may hold together of frames not yet complete. A peer that sends
 * the first 200 MiB of a 256 MiB frame holds them until the frame ends or its deadline passes, and a
 * few such peers at once would take the process's memory; each is within the per-frame cap. Readers
 * charge the bytes of their partial frame as they arrive and give them back when it completes or the
 * reader ends; a charge past the budget is refused, and that reader's peer is cut.
 */
import { ClinkError } from '../errors.js';

export class FrameMemoryError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_FRAME_TOO_LARGE', message);
  }
}

export class FrameBudget {
  private used = 0;

  constructor(
    readonly limitBytes: number,
    /** The flag that sets it, for the refusal. */
    readonly flag = '--max-inflight-frame-bytes',
  ) {}

  /** Bytes held now by every reader sharing this budget. */
  get usedBytes(): number {
    return this.used;
  }

  /** Charge `n` more bytes; throws FrameMemoryError (charging nothing) when they do not fit. */
  charge(n: number, peer: string): void {
    if (this.used + n > this.limitBytes) {
      throw new FrameMemoryError(
        `${peer}'s partial frame would take the node's frames in flight to ${this.used + n} bytes, over ${this.limitBytes} (${this.flag}); cutting it`,
      );
    }
    this.used += n;
  }

  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}
