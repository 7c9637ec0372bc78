/**
 * BarrierAligner: aligned checkpoints at a task with several input channels. A channel that has
 * delivered checkpoint N's barrier is held back (its elements wait, in order) until every channel
 * still open has delivered it; then the task snapshots, forwards the barrier and replays what was held.
 *
 * Barrier ids decide, never arrival alone: a barrier newer than the alignment in progress means that
 * checkpoint was given up upstream (aborted, or declined by a worker), so the older alignment is
 * cancelled, what it held is released, and the newer one starts; a barrier of a checkpoint already
 * completed, cancelled or aborted here is dropped. An abort resets the alignment the same way.
 *
 *   idle ──barrier N──► aligning N ──last open channel delivers N (or ends)──► idle (complete N)
 *                         │  ├──barrier M > N──► aligning M (N cancelled, held released)
 *                         │  └──barrier M ≤ N on a channel not yet in N── dropped if M < N
 *                         └──abort(N)──► idle (held released)
 */
import type { StreamElement } from './elements.js';

export type AlignerEvent =
  | { kind: 'complete'; checkpointId: number; alignmentMs: number }
  | { kind: 'cancelled'; checkpointId: number; by: number }
  | { kind: 'stale'; checkpointId: number }
  | { kind: 'none' };

export class BarrierAligner {
  private aligning: { id: number; got: Set<number>; since: number } | null = null;
  private readonly ended: number[];
  /** Elements of channels that delivered the barrier, in arrival order, while aligning. */
  private readonly held: StreamElement[] = [];
  /** Released elements, processed before anything new is taken from the queue. */
  private readonly replay: StreamElement[] = [];
  /** The highest checkpoint completed, cancelled or aborted here: its barriers and older ones are dropped. */
  private settled = 0;
  /** Alignments given up for a newer barrier. */
  cancelled = 0;

  constructor(
    private channels: number,
    private readonly now: () => number = () => performance.now(),
    /** Told of each element it holds back, and of each it lets go (the queue bounds a held channel). */
    private readonly onHold: (e: StreamElement, held: boolean) => void = () => undefined,
  ) {
    this.ended = new Array<number>(channels).fill(0);
  }

  /** A hot rescale's new input channels, numbered after the existing ones (between alignments only). */
  addChannels(count: number): void {
    for (let i = 0; i < count; i++) this.ended.push(0);
    this.channels += count;
  }

  /** The checkpoint being aligned, if any. */
  get checkpointId(): number | undefined {
    return this.aligning?.id;
  }

  /** Checkpoint `checkpointId`'s alignment in progress: the channels that delivered its barrier, and for how long. */
  delivered(checkpointId: number): { channels: number[]; alignmentMs: number } | undefined {
    const a = this.aligning;
    if (!a || a.id !== checkpointId) return undefined;
    return { channels: [...a.got], alignmentMs: this.now() - a.since };
  }

  get heldCount(): number {
    return this.held.length;
  }

  /** Elements taken from the queue and not yet processed: released, then held. */
  unprocessed(): StreamElement[] {
    return [...this.replay, ...this.held];
  }

  /** The next released element, if any: it goes before anything new from the queue. */
  nextReplayed(): StreamElement | undefined {
    return this.replay.shift();
  }

  /** Whether `e` must wait: its channel has delivered the barrier being aligned. Takes it if so. */
  hold(e: StreamElement): boolean {
    if (!this.aligning || !this.aligning.got.has(e.channel)) return false;
    this.held.push(e);
    this.onHold(e, true);
    return true;
  }

  /** A barrier arrived on `channel`. */
  onBarrier(channel: number, checkpointId: number): AlignerEvent {
    if (checkpointId <= this.settled) return { kind: 'stale', checkpointId };
    let event: AlignerEvent = { kind: 'none' };
    if (this.aligning && checkpointId < this.aligning.id) return { kind: 'stale', checkpointId };
    if (this.aligning && checkpointId > this.aligning.id) {
      const old = this.aligning.id;
      this.reset(old);
      this.cancelled++;
      event = { kind: 'cancelled', checkpointId: old, by: checkpointId };
    }
    this.aligning ??= { id: checkpointId, got: new Set(), since: this.now() };
    this.aligning.got.add(channel);
    return this.completeIfAligned() ?? event;
  }

  /** A channel ended: it no longer holds an alignment back. */
  onEnd(channel: number): AlignerEvent {
    this.ended[channel] = 1;
    return this.completeIfAligned() ?? { kind: 'none' };
  }

  /**
   * The checkpoint was aborted: an alignment of it (or of an older one) stops and what it held is
   * released; its barriers still in flight are dropped when they come. Returns whether one stopped.
   */
  abort(checkpointId: number): boolean {
    this.settled = Math.max(this.settled, checkpointId);
    if (!this.aligning || this.aligning.id > checkpointId) return false;
    this.reset(this.aligning.id);
    return true;
  }

  private completeIfAligned(): AlignerEvent | undefined {
    const a = this.aligning;
    if (!a) return undefined;
    for (let c = 0; c < this.channels; c++) if (!this.ended[c] && !a.got.has(c)) return undefined;
    this.reset(a.id);
    return { kind: 'complete', checkpointId: a.id, alignmentMs: this.now() - a.since };
  }

  private reset(id: number): void {
    this.settled = Math.max(this.settled, id);
    this.aligning = null;
    for (const e of this.held) {
      this.onHold(e, false);
      this.replay.push(e);
    }
    this.held.length = 0;
  }
}
