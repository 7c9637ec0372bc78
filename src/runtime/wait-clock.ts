/**
 * WaitClock: the time a subtask spent in waits of one kind (for input, for room downstream), the wait
 * under way included. A wait counted only once it ends reads as nothing for as long as it lasts: a
 * source on a seconds-long first fetch looked busy, a task stuck behind a stalled downstream looked
 * unhindered, and the autoscaler acted on that.
 */
export class WaitClock {
  private doneMs = 0;
  private since: number | undefined;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A wait begins (a second begin before its end restarts nothing: the first still counts). */
  begin(): void {
    this.since ??= this.now();
  }

  /** The wait under way, if any, has ended. */
  end(): void {
    if (this.since === undefined) return;
    this.doneMs += this.now() - this.since;
    this.since = undefined;
  }

  /** Every wait so far, the one under way included. */
  get totalMs(): number {
    return this.doneMs + (this.since === undefined ? 0 : this.now() - this.since);
  }
}
