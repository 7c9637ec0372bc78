/**
 * RemoteChannel: the sending end of one channel to a subtask in another process, used by a RecordWriter
 * like a local queue. Flow control is credit-based, as in Flink: the receiver grants one credit per
 * record batch it has room for, and returns one each time its task takes a batch. Batches wait here
 * until there is credit; control elements (watermarks, status, end) travel in band, in order, behind
 * them. The channel reports itself full while anything waits, so its task stops pulling input: a slow
 * receiver slows the source, and memory on both sides is bounded by the credits, never by the data rate.
 *
 * What carries the frames is a transport: a connection of the channel's own (tcpTransport), or a link
 * shared by every channel between two processes (link-mux.ts).
 */
import type { Socket } from 'node:net';
import { PeerLostError } from '../errors.js';
import type { ChannelCount, ClinkMetrics } from '../metrics/index.js';
import { dial, FrameReader, gatheredWrites, type TlsClientConfig } from '../net/index.js';
import { decodeMessage, encodeFrame, makeMessage, type MessageOf } from '../protocol/index.js';
import { BARRIER, BATCH, END, type BarrierElement, type ChannelSink, type StreamElement } from '../runtime/index.js';
import { elementFrame, MSGPACK_ONLY, type BatchReads } from './frames.js';
import type { ChannelLabels } from './inbound.js';

/** What the transport tells its channel. */
export interface ChannelEvents {
  /** The receiver has room for this many more batches, reads these batch encodings, and asks for batches of at most `batchLimit` records (0: any). */
  credit(credits: number, reads: BatchReads & { batchLimit: number }): void;
  /** The transport failed or the receiver turned the channel away; ignored once the stream is whole. */
  lost(err: Error): void;
}

/** What a channel writes through: whole frames (length prefix included), in order. */
export interface ChannelTransport {
  write(frame: Buffer): void;
  /** DataEnd is written: the stream is whole. */
  end(): void;
  /** Stop at once (the job was cancelled or failed). */
  destroy(): void;
}

export type OpenTransport = (events: ChannelEvents) => ChannelTransport;

export class RemoteChannel implements ChannelSink {
  private readonly transport: ChannelTransport;
  private failure: Error | undefined;
  private credits = 0;
  /** What the receiver reads (it says so with every credit). */
  private reads: BatchReads = MSGPACK_ONLY;
  /** The most records a batch should hold, as the receiver last asked (buffer debloating); 0: any. */
  batchLimit = 0;
  private readonly pending: StreamElement[] = [];
  private readonly waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private ended = false;
  /** DataEnd has been written: what comes after (a reset by the closing receiver) is not a failure. */
  private endWritten = false;
  private blockedSince = 0;
  private readonly sent: ChannelCount | undefined;

  constructor(
    open: OpenTransport,
    private readonly onError: (err: Error) => void,
    private readonly metrics?: ClinkMetrics,
    private readonly labels?: ChannelLabels,
  ) {
    this.sent = metrics && labels ? metrics.channelSent.of(labels) : undefined;
    this.transport = open({
      credit: (n, reads) => {
        this.credits += n;
        this.reads = reads;
        this.batchLimit = reads.batchLimit;
        this.transmit();
      },
      lost: (err) => {
        if (!this.endWritten) this.fail(err);
      },
    });
  }

  push(element: StreamElement): void {
    if (this.failure || this.ended) return;
    if (element.kind === BARRIER && element.unaligned) {
      this.overtake(element, this.pending.length);
      return;
    }
    if (element.kind === END) this.ended = true;
    this.pending.push(element);
    this.transmit();
  }

  /** Adaptive alignment converted checkpoint `checkpointId`: its barrier waiting here overtakes what waits ahead of it. */
  overtakeWith(checkpointId: number): void {
    if (this.failure) return;
    const at = this.pending.findIndex((e) => e.kind === BARRIER && e.checkpointId === checkpointId);
    if (at < 0) return;
    const [barrier] = this.pending.splice(at, 1) as [BarrierElement];
    this.overtake({ ...barrier, unaligned: true }, at);
  }

  /**
   * An unaligned barrier goes ahead of the first `count` elements waiting: the receiver counts those in
   * as in flight (runtime/inflight.ts) and takes them at once beyond the credits
   * (InboundChannel.overtakenToCome), so the capture is whole without waiting for the receiving task to
   * work through its queue. The credits go negative: this channel sends nothing more until the receiver
   * has given them back.
   */
  private overtake(barrier: BarrierElement, count: number): void {
    this.transport.write(elementFrame({ ...barrier, overtaken: count }, this.reads));
    this.transmit(count);
  }

  /** Send what waits, in order, while batches have credit (the first `forced` elements whatever the credit). */
  private transmit(forced = 0): void {
    while (this.pending.length > 0 && !this.failure) {
      const e = this.pending[0]!;
      if (e.kind === BATCH) {
        if (this.credits <= 0 && forced <= 0) break;
        this.credits--;
      }
      forced--;
      this.pending.shift();
      const frame = elementFrame(e, this.reads);
      this.transport.write(frame);
      if (e.kind === BATCH) this.sent?.add(e.values.length, frame.length);
      if (e.kind === END) {
        this.endWritten = true;
        this.transport.end();
      }
    }
    if (!this.isFull) this.wake();
  }

  get isFull(): boolean {
    return this.pending.length > 0 || this.credits <= 0;
  }

  waitNotFull(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.isFull) return Promise.resolve();
    if (this.blockedSince === 0) this.blockedSince = performance.now();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private wake(): void {
    if (this.blockedSince !== 0) {
      if (this.metrics && this.labels)
        this.metrics.channelBackpressured.inc(this.labels, (performance.now() - this.blockedSince) / 1000);
      this.blockedSince = 0;
    }
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.onError(err);
  }

  /** Close without ending the stream (the job was cancelled or failed). */
  destroy(): void {
    this.ended = true;
    this.transport.destroy();
    for (const w of this.waiters.splice(0)) w.reject(new Error('channel closed'));
  }
}

/** A channel over a data connection of its own to the data server at host:port. */
export function tcpTransport(
  host: string,
  port: number,
  hello: Omit<MessageOf<'DataHello'>, 'type'>,
  tls?: TlsClientConfig,
): OpenTransport {
  return (events) => {
    // Over TLS the hello is queued until the handshake is done; a data peer's certificate must name the host it advertised.
    const socket: Socket = dial(host, port, tls);
    socket.setNoDelay(true);
    socket.write(encodeFrame(makeMessage('DataHello', hello)));
    const reader = new FrameReader(socket);
    let finished = false;
    // Once DataEnd is written the stream is whole: the receiver closes on reading it, and over TLS that
    // close can reset this side (its close_notify arrives unread), which is no failure.
    socket.on('error', (err) =>
      events.lost(new PeerLostError(`data connection to ${host}:${port} failed: ${err.message}`, { cause: err })),
    );
    socket.on('close', () => {
      if (!finished)
        events.lost(new PeerLostError(`data connection to ${host}:${port} closed before the stream ended`));
    });
    void (async () => {
      try {
        for (let f = await reader.next(); f; f = await reader.next()) {
          const m = decodeMessage(f);
          if (m.type !== 'DataCredit') throw new Error(`unexpected ${m.type} from a data receiver`);
          events.credit(m.credits, m);
        }
      } catch (err) {
        if (!finished)
          events.lost(new PeerLostError(`data connection failed: ${(err as Error).message}`, { cause: err }));
      }
    })();
    const write = gatheredWrites(socket);
    return {
      write,
      end: () => {
        finished = true;
        socket.end();
      },
      destroy: () => {
        finished = true;
        reader.close();
        socket.destroy();
      },
    };
  };
}
