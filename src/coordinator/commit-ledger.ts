/**
 * Which completed checkpoints' commits a job's sinks have confirmed. A subtask whose snapshot holds what
 * a sink prepared (SubtaskCheckpointed.commits) owes the checkpoint a confirmation (CheckpointCommitted)
 * once it has made that visible. A sink commits everything it prepared up to the checkpoint, and a
 * restore commits what its checkpoint recorded before any record flows, so a checkpoint confirmed by all
 * who owed it confirms every earlier one too. A subtask that ends cleanly has committed all it
 * prepared. The checkpoint coordinator is the only writer; the record it keeps on disk is `COMMITTED`
 * (checkpoint-storage.ts).
 */
export interface CommitRecord {
  /** Every checkpoint up to this one has had its commits confirmed (0: none yet). */
  checkpointId: number;
  /** The newest checkpoint each committing subtask (`<task>#<index>`) confirmed. */
  subtasks: Record<string, number>;
  confirmedAtMs: number;
}

export class CommitLedger {
  /** Completed checkpoints still owed a confirmation, by id: the subtasks yet to give one. */
  private readonly owed = new Map<number, Set<string>>();
  private readonly bySubtask = new Map<string, number>();
  private through = 0;

  /** Every checkpoint up to this one has had its commits confirmed. */
  get confirmedThrough(): number {
    return this.through;
  }

  /** Completed checkpoints whose commits are not confirmed yet, oldest first. */
  get owedCheckpoints(): number[] {
    return [...this.owed.keys()].sort((a, b) => a - b);
  }

  /** Checkpoint `id` completed: each of `committers` owes it a confirmation. Returns whether confirmedThrough moved. */
  owe(id: number, committers: Iterable<string>): boolean {
    const waiting = new Set([...committers].filter((k) => (this.bySubtask.get(k) ?? 0) < id));
    if (waiting.size > 0) this.owed.set(id, waiting);
    else this.owed.delete(id);
    return this.settle(id, waiting.size === 0);
  }

  /** `subtasks` committed everything they prepared up to checkpoint `id`. Returns whether confirmedThrough moved. */
  confirm(id: number, subtasks: Iterable<string>): boolean {
    let newest = 0;
    for (const k of subtasks) {
      this.bySubtask.set(k, Math.max(this.bySubtask.get(k) ?? 0, id));
      for (const [cid, waiting] of this.owed) {
        if (cid > id || !waiting.delete(k) || waiting.size > 0) continue;
        this.owed.delete(cid);
        newest = Math.max(newest, cid);
      }
    }
    return newest > 0 && this.settle(newest, true);
  }

  /** `subtask` ended cleanly: it committed all it had prepared. */
  ended(subtask: string): boolean {
    const newest = Math.max(0, ...this.owed.keys());
    return newest > 0 && this.confirm(newest, [subtask]);
  }

  /** What the COMMITTED record holds. */
  record(nowMs: number): CommitRecord {
    return {
      checkpointId: this.through,
      subtasks: Object.fromEntries([...this.bySubtask].sort(([a], [b]) => a.localeCompare(b))),
      confirmedAtMs: nowMs,
    };
  }

  /** Checkpoint `id` is confirmed (when `done`): it and every checkpoint before it. */
  private settle(id: number, done: boolean): boolean {
    if (!done || id <= this.through) return false;
    this.through = id;
    for (const cid of [...this.owed.keys()]) if (cid <= id) this.owed.delete(cid);
    return true;
  }
}
