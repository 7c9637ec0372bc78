/**
 * What a job's checkpoints came to: the latest completed (the API's history), how many in all, the latest
 * aborted; and what completing one reports (metrics, its span, the log line).
 */
import type {
  CheckpointFailure,
  CheckpointServices,
  CompletedCheckpoint,
  PendingCheckpoint,
} from './checkpoint-ports.js';

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

/** Checkpoint `p` of job `jobId` completed at `completedAtMs`: counted, its span ended, logged; returns its record. */
export function reportCompleted(
  { metrics, log }: Pick<CheckpointServices, 'metrics' | 'log'>,
  jobId: string,
  p: PendingCheckpoint,
  completedAtMs: number,
): CompletedCheckpoint {
  const durationMs = completedAtMs - p.startedAt;
  const kind = p.savepoint ? 'savepoint' : p.final ? 'final' : 'periodic';
  const acks = Object.values(p.acks);
  const inflightBytes = acks.reduce((n, a) => n + a.inflightBytes, 0);
  const startDelayMs = Math.max(0, ...acks.map((a) => a.startDelayMs));
  const alignment = p.unaligned || acks.some((a) => a.unaligned) ? 'unaligned' : 'aligned';
  metrics.checkpointsCompleted.inc();
  p.span?.end({
    'clink.checkpoint.outcome': 'completed',
    'clink.checkpoint.bytes': p.bytes,
    'clink.checkpoint.duration_ms': durationMs,
    'clink.checkpoint.alignment_ms': p.alignmentMs,
    'clink.checkpoint.alignment': alignment,
    'clink.checkpoint.inflight_bytes': inflightBytes,
  });
  metrics.lastCheckpointDurationMs.set(durationMs);
  metrics.lastCheckpointBytes.set(p.bytes);
  metrics.lastCheckpointAlignmentMs.set(p.alignmentMs);
  metrics.lastCheckpointInflightBytes.set(inflightBytes);
  metrics.lastCheckpointStartDelayMs.set(startDelayMs);
  if (alignment === 'unaligned') metrics.checkpointsUnaligned.inc();
  log.info(
    { jobId, checkpointId: p.id, durationMs, stateBytes: p.bytes, alignment, inflightBytes },
    `${kind === 'savepoint' ? 'savepoint' : 'checkpoint'} ${p.id} completed for job ${jobId} in ${durationMs} ms (${p.bytes} bytes${alignment === 'unaligned' ? `, unaligned, ${inflightBytes} bytes in flight` : ''})`,
  );
  return {
    checkpointId: p.id,
    kind,
    alignment,
    durationMs,
    stateBytes: p.bytes,
    alignmentMs: p.alignmentMs,
    startDelayMs,
    inflightBytes,
    completedAtMs,
    subtasks: p.acks,
  };
}
