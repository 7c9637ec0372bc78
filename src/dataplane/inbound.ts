/**
 * The receiving end of channels, whatever carries them (a connection of its own, or a mesh link):
 * which subtask input a DataHello names, and the credit bookkeeping of one channel. The receiver grants
 * the sender a fixed number of batches, and gives them back as the subtask takes batches, so what a
 * channel can put in memory here is bounded by its credits. A sender that exceeds them is cut off.
 *
 * Credits go back in grants of half the channel's credits (one, for a channel of one or two): a grant
 * of one per batch taken was, on a shuffle, half of a link's writes, each a frame alone (a batch is
 * taken, the task works on it, and the grant leaves when it yields). The sender is never starved by
 * this: while it waits for credit, the batches it has sent and the credits held back add up to all of
 * its credits, fewer than half of them held back, so batches wait here, and taking them returns the rest.
 */
import type { ChannelCount, ClinkMetrics } from '../metrics/index.js';
import { COLUMNS_SUPPORTED, encodeFrame, makeMessage, type MessageOf, type Message } from '../protocol/index.js';
import { BARRIER, BATCH, END, type InputQueue } from '../runtime/index.js';
import { frameElement } from './frames.js';
import { helloMacValid } from './hello-mac.js';

/** Record batches a channel may have in flight or queued at its receiver. @default 4 */
export const DEFAULT_CHANNEL_CREDITS = 4;

/**
 * A credit grant, saying too whether this process reads columnar batches, and one timestamp, constant
 * columns and tuples (any host does), and how many records a batch should hold (0: any).
 */
export const creditMessage = (credits: number, batchLimit = 0): Message =>
  makeMessage('DataCredit', { credits, columns: COLUMNS_SUPPORTED, constants: true, tuples: true, batchLimit });
/** Grants of up to this many credits, the common sizes, are encoded once (without a batch limit). */
const COMMON_GRANTS = Array.from({ length: 9 }, (_, n) => encodeFrame(creditMessage(n)));
/** A credit grant as a whole frame. */
export const creditFrame = (credits: number, batchLimit = 0): Buffer =>
  (batchLimit === 0 ? COMMON_GRANTS[credits] : undefined) ?? encodeFrame(creditMessage(credits, batchLimit));

/** A subtask's input, as the data plane sees it. */
export interface InboundTarget {
  queue: InputQueue;
  /** Its deploy attempt's data secret: a connection whose DataHello MAC does not verify under it is refused. */
  secret?: string;
  /** The channel number of (edge, upstream subtask) at this subtask, or undefined if it has none. */
  channelOf(edgeIndex: number, upstreamSubtask: number): number | undefined;
}

/** A channel the receiver turned away; `reason` labels the refusal metric. */
export class ChannelRefused extends Error {
  constructor(
    readonly reason: string,
    why: string,
  ) {
    super(`refused: ${why}`);
  }
}

export interface ChannelLabels {
  job: string;
  edge: string;
  from: string;
  to: string;
}

const key = (jobId: string, attempt: number, taskId: string, subtask: number): string =>
  `${jobId}\u0000${attempt}\u0000${taskId}\u0000${subtask}`;

/** The subtask inputs of a process, by (job, attempt, task, subtask). */
export class InboundTargets {
  private readonly targets = new Map<string, InboundTarget>();

  constructor(private readonly metrics?: ClinkMetrics) {}

  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void {
    this.targets.set(key(jobId, attempt, taskId, subtask), target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.delete(key(jobId, attempt, taskId, subtask));
  }

  /** The queue and channel number a DataHello names, or ChannelRefused saying why not. */
  resolve(hello: Message): { queue: InputQueue; channel: number; labels: ChannelLabels } {
    if (hello.type !== 'DataHello') throw this.refused('not_hello', `expected DataHello, got ${hello.type}`);
    const target = this.targets.get(key(hello.jobId, hello.attempt, hello.downstreamTaskId, hello.downstreamSubtask));
    if (!target)
      throw this.refused(
        'unknown_subtask',
        `no subtask ${hello.downstreamTaskId}#${hello.downstreamSubtask} of job ${hello.jobId} attempt ${hello.attempt} here`,
      );
    const channel = target.channelOf(hello.edgeIndex, hello.upstreamSubtask);
    if (channel === undefined)
      throw this.refused(
        'unknown_channel',
        `subtask ${hello.downstreamTaskId}#${hello.downstreamSubtask} has no input from edge ${hello.edgeIndex}`,
      );
    if (target.secret !== undefined && !helloMacValid(target.secret, hello)) {
      throw this.refused(
        'bad_secret',
        `its DataHello for ${hello.downstreamTaskId}#${hello.downstreamSubtask} of job ${hello.jobId} does not prove the attempt's secret`,
      );
    }
    return { queue: target.queue, channel, labels: labelsOf(hello) };
  }

  private refused(reason: string, why: string): ChannelRefused {
    this.metrics?.dataConnectionsRefused.inc({ reason });
    return new ChannelRefused(reason, why);
  }
}

export const labelsOf = (hello: Omit<MessageOf<'DataHello'>, 'type'>): ChannelLabels => ({
  job: hello.jobId,
  edge: String(hello.edgeIndex),
  from: `${hello.upstreamTaskId}#${hello.upstreamSubtask}`,
  to: `${hello.downstreamTaskId}#${hello.downstreamSubtask}`,
});

/** One channel's receiving end: hands its elements to the subtask's queue and grants credits through `grant`. */
export class InboundChannel {
  private outstanding: number;
  /** Credits for batches taken, not yet granted back: they go back once there are `grantSize`. */
  private owed = 0;
  private readonly grantSize: number;
  private readonly received: ChannelCount | undefined;
  /**
   * Elements still to come that an unaligned barrier overtook: they follow it at once, credit or not
   * (RemoteChannel.push), so the checkpoint's capture of them does not wait for this task to work
   * through its queue. A batch among them may exceed the credits, and is counted against them all the
   * same: the sender owes them until this task takes enough to give them back. Only those: counted in
   * elements, a watermark among them leaves no credit to spare after.
   */
  private overtakenToCome = 0;

  constructor(
    private readonly queue: InputQueue,
    private readonly channel: number,
    labels: ChannelLabels,
    /** Sends a grant of credits, with the batch limit the queue's task asks for (buffer debloating). */
    private readonly grant: (credits: number, batchLimit: number) => void,
    private readonly credits = DEFAULT_CHANNEL_CREDITS,
    metrics?: ClinkMetrics,
  ) {
    this.outstanding = credits;
    this.received = metrics?.channelReceived.of(labels);
    this.grantSize = Math.max(1, Math.floor(credits / 2));
    grant(credits, queue.batchLimit);
  }

  private readonly returnCredit = (): void => {
    this.outstanding++;
    if (++this.owed < this.grantSize) return;
    this.grant(this.owed, this.queue.batchLimit);
    this.owed = 0;
  };

  /** Take one data frame (its payload was `bytes` long); true once it was the channel's end. */
  take(m: Message, bytes: number): boolean {
    const e = frameElement(m, this.channel);
    if (!e) throw new Error(`unexpected ${m.type} on a data channel`);
    if (e.kind === BATCH) {
      if (this.outstanding <= 0 && this.overtakenToCome <= 0)
        throw new Error(`the sender exceeded its ${this.credits} credits`);
      this.outstanding--;
      e.onTaken = this.returnCredit;
      this.received?.add(e.values.length, bytes + 4);
    }
    if (this.overtakenToCome > 0) this.overtakenToCome--;
    else if (e.kind === BARRIER && e.unaligned) this.overtakenToCome = e.overtaken ?? 0;
    this.queue.push(e);
    return e.kind === END;
  }
}
