/**
 * A job's confirmed commits: the CommitLedger of which completed checkpoints its sinks have made visible,
 * and its COMMITTED record (under the job's checkpoint directory; none without one), rewritten one write
 * at a time as the ledger moves: a write asked for while one is out follows it with the ledger as it then is.
 */
import type { MessageOf } from '../protocol/index.js';
import { WriteChain } from '../util/index.js';
import type { CheckpointedJob, CheckpointServices } from './checkpoint-ports.js';
import { jobDir } from './checkpoint-storage.js';
import { CommitLedger } from './commit-ledger.js';

export class ConfirmedCommits {
  private readonly ledger = new CommitLedger();
  private readonly writes = new WriteChain();

  constructor(
    private readonly job: Pick<CheckpointedJob, 'id' | 'checkpoint'>,
    private readonly services: CheckpointServices,
  ) {}

  /** Every checkpoint up to this one has had its commits confirmed. */
  get confirmedThrough(): number {
    return this.ledger.confirmedThrough;
  }

  /** Completed checkpoints whose commits are not confirmed yet, oldest first. */
  get owedCheckpoints(): number[] {
    return this.ledger.owedCheckpoints;
  }

  /** Checkpoint `id` completed: each of `committers` owes it a confirmation. */
  owe(id: number, committers: Iterable<string>): void {
    if (this.ledger.owe(id, committers)) this.record();
  }

  /** A worker's subtasks have made visible what they prepared up to checkpoint `m.checkpointId`. */
  confirmed(m: MessageOf<'CheckpointCommitted'>): void {
    const { id } = this.job;
    if (m.error) {
      const line = `job ${id}: a commit of checkpoint ${m.checkpointId} failed: ${m.error}`;
      this.services.log.warn({ jobId: id, checkpointId: m.checkpointId }, line);
    }
    if (this.ledger.confirm(m.checkpointId, m.subtasks)) this.record();
  }

  /** A subtask ended cleanly: it committed all it had prepared. */
  ended(key: string): void {
    if (this.ledger.ended(key)) this.record();
  }

  private record(): void {
    const { id, checkpoint } = this.job;
    const dir = checkpoint.checkpointDir;
    if (!dir) return;
    const { storage, clock, log } = this.services;
    this.writes.then(
      () => storage.recordCommits(jobDir(dir, id), this.ledger.record(clock.now())),
      (err) =>
        log.warn({ err, jobId: id }, `could not record the confirmed commits of job ${id}: ${(err as Error).message}`),
    );
  }
}
