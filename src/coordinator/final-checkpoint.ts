/**
 * When a job's final checkpoint may begin. Its barriers follow the sources' last records and it is
 * aligned: its commit must hold the job's whole tail. With unaligned (or adaptive) checkpoints, a backlog
 * ahead of it would hold it for as long as that backlog takes, past its timeout, and the restart that
 * follows replays the same backlog (a job 5 ms a record behind by 8 000 records failed so until its
 * restarts were spent). There, periodic checkpoints go on while the backlog drains (the sources, waiting
 * for the final id, still send their barriers) and each commits progress. The final one begins once a
 * periodic checkpoint begun after every source ended finds nothing in flight, or fails: waiting longer
 * would not help then.
 */
export class FinalCheckpointGate {
  /** Source subtasks (`<task>#<index>`) at the end of their input, asking for the final checkpoint. */
  private requests = new Set<string>();
  private drained = false;

  /**
   * `sources`: how many source subtasks the job has. `drainFirst`: whether periodic checkpoints that
   * overtake a backlog run (unaligned or adaptive alignment, and an interval).
   */
  constructor(
    private readonly sources: () => number,
    private readonly drainFirst: () => boolean,
  ) {}

  /** A source subtask reached the end of its input. */
  request(subtask: string): void {
    this.requests.add(subtask);
  }

  /** Every source subtask has reached the end of its input. */
  wanted(): boolean {
    return this.requests.size >= this.sources();
  }

  /** The final checkpoint may begin: every source has ended, and what was ahead of them has drained. */
  ready(): boolean {
    return this.wanted() && (this.drained || !this.drainFirst());
  }

  /**
   * A periodic checkpoint begun once every source had ended is over: it completed with `inflightBytes`
   * of records in flight, or (undefined) it failed.
   */
  periodicEnded(inflightBytes: number | undefined): void {
    if (inflightBytes === undefined || inflightBytes === 0) this.drained = true;
  }

  /** The job restarts: its sources start over. */
  reset(): void {
    this.requests = new Set();
    this.drained = false;
  }
}
