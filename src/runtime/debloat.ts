/**
 * How much data waits ahead of a checkpoint barrier, bounded by time rather than by count (Flink's
 * buffer debloating, 1.14). A barrier, aligned or not, is taken only between batches, and an aligned
 * one only after everything queued ahead of it: at a stage taking 5 ms a record, a queue of 8 batches of
 * 1 000 records is 40 s of work, and a checkpoint of it expires. Two bounds, both measured:
 *
 * - A task with inputs (Debloater) measures how fast it processes records, and asks its senders for
 *   batches of a size such that what its queue holds is about `targetMs` of work: the limit rides on
 *   the queue for local senders and on every credit grant for remote ones. Opt-in, as in Flink
 *   (`--debloat-target-ms`, `taskmanager.network.memory.buffer-debloat.target`).
 * - A source (nextReadSize) reads as many records as its chain gets through in SLICE_TARGET_MS,
 *   so a barrier asked for waits at most about that for the batch under way. Always: a fast chain reads
 *   whole batches anyway, and only a chain slower than 50 us a record reads fewer.
 */

/**
 * How long one piece of a task's work may take, so a barrier waits at most about this for the piece
 * under way: a source's read with its chain's processing of it, as its next read is sized, and a slice
 * of a batch at a task with inputs.
 */
export const SLICE_TARGET_MS = 50;

/**
 * The size of a source's next read: what its chain got through in SLICE_TARGET_MS, given that
 * the last read of `records` kept it busy `busyMs` (waits for input not counted), within 1 and `max`.
 * It falls at once and grows at most twofold a read, so one slow batch (a collection) costs a few reads.
 */
export function nextReadSize(current: number, max: number, records: number, busyMs: number): number {
  const grown = Math.min(max, current * 2);
  if (records <= 0 || busyMs <= SLICE_TARGET_MS) return grown;
  return Math.max(1, Math.min(grown, Math.floor((SLICE_TARGET_MS * records) / busyMs)));
}

/**
 * The batch size a debloating task asks for before it has measured: small, because what its senders
 * send before the first measurement is queued ahead of the first barrier (at 5 ms a record, 8 batches
 * of 1 000 are 40 s), and one period (DEBLOAT_PERIOD_MS) of small batches costs a fast stage little.
 */
export const DEBLOAT_INITIAL_BATCH = 16;

/** The batch limit a task's queue starts with: none when debloating is off. */
export const initialBatchLimit = (debloatTargetMs: number, batchSize: number): number =>
  debloatTargetMs > 0 ? Math.min(DEBLOAT_INITIAL_BATCH, batchSize) : 0;

/** How often a Debloater measures (Flink's buffer-debloat.period). */
export const DEBLOAT_PERIOD_MS = 200;
/**
 * Its first measurement comes sooner: the small batches before it cost a fast stage (a second-long run
 * of Nexmark q5 at p=1 spent 20 % more CPU when the first came after a whole period).
 */
export const DEBLOAT_FIRST_PERIOD_MS = 20;
/** A new limit is asked for only when it differs from the last by more than this share (Flink's threshold-percentages, 25). */
export const DEBLOAT_THRESHOLD = 0.25;
/** The weight of the newest measurement in the moving average of throughput. */
const SMOOTHING = 0.5;

/**
 * A task's input side of buffer debloating: records processed over time busy (time waiting for input
 * is not counted; time waiting for room downstream is, since it slows what drains the queue), averaged,
 * gives the batch size at which `capacityBatches` batches are `targetMs` of work.
 */
export class Debloater {
  private windowStart: number;
  private idleAtStart: number;
  private records = 0;
  /** Records per ms, averaged; negative until measured. */
  private rate = -1;
  /** The batch size senders are asked to fill to. */
  limit: number;

  constructor(
    private readonly targetMs: number,
    private readonly capacityBatches: number,
    private readonly maxBatch: number,
    now: number,
    idleMs: number,
  ) {
    this.windowStart = now;
    this.idleAtStart = idleMs;
    this.limit = initialBatchLimit(targetMs, maxBatch);
  }

  /** `n` records were processed. */
  processed(n: number): void {
    this.records += n;
  }

  /** Once a period has passed, measure and return the limit (changed only past the threshold). */
  sample(now: number, idleMs: number): number {
    const elapsed = now - this.windowStart;
    if (elapsed < (this.rate < 0 ? DEBLOAT_FIRST_PERIOD_MS : DEBLOAT_PERIOD_MS)) return this.limit;
    const busy = elapsed - (idleMs - this.idleAtStart);
    const records = this.records;
    this.windowStart = now;
    this.idleAtStart = idleMs;
    this.records = 0;
    // Idle the whole period: nothing waits ahead of a barrier here, whatever the batches.
    if (busy <= 0) return this.limit;
    const measured = records / busy;
    this.rate = this.rate < 0 ? measured : this.rate + SMOOTHING * (measured - this.rate);
    const wanted = Math.round((this.rate * this.targetMs) / this.capacityBatches);
    const next = Math.max(1, Math.min(this.maxBatch, wanted));
    if (Math.abs(next - this.limit) > DEBLOAT_THRESHOLD * this.limit) this.limit = next;
    return this.limit;
  }
}
