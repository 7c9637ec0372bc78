/**
 * LinkMux: channels multiplexed over links, one full-duplex connection per pair of processes (a mesh
 * run's links, design record 017; a cluster's worker-to-worker data links, design record 019). Each
 * channel's frames travel as a LinkFrame naming the channel (numbered by the side that opened it) and
 * its direction. A channel opens with its DataHello, exactly as over a connection of its own; its
 * credits, elements and end are the same frames, so flow control stays per channel: one slow receiver
 * holds back its own sender, not the link. A receiver turns a channel away with DataRefused; a sender
 * that stops early (its job cancelled or failed) sends DataRefused the other way, so the receiver forgets
 * the channel as it would a closed connection.
 */
import { PeerLostError } from '../errors.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { gatheredWrites, type FrameConnection } from '../net/index.js';
import {
  decodeMessage,
  encodeFrame,
  encodeMessage,
  makeMessage,
  MessageKind,
  type Message,
  type MessageOf,
} from '../protocol/index.js';
import {
  ChannelRefused,
  creditFrame,
  DEFAULT_CHANNEL_CREDITS,
  InboundChannel,
  type InboundTargets,
} from './inbound.js';
import type { ChannelEvents, ChannelTransport } from './remote-channel.js';

const FRAME_HEADER_BYTES = 4;
/** A LinkFrame's bytes before its inner payload: length, kind, channel, fromOpener, the payload's length. */
const LINK_HEADER_BYTES = 4 + 1 + 4 + 1 + 4;
const LINK_FRAME_KIND = MessageKind.LinkFrame;
/** What a sender that stops early tells the receiver (DataRefused from the opener). */
const ABANDONED = 'the sender stopped';

/** The first bytes of encodeFrame(LinkFrame { channel, fromOpener, frame }) for a `frame` of `payloadBytes`. */
export function linkFrameHeader(channel: number, fromOpener: boolean, payloadBytes: number): Buffer {
  const h = Buffer.allocUnsafe(LINK_HEADER_BYTES);
  h.writeUInt32BE(LINK_HEADER_BYTES - FRAME_HEADER_BYTES + payloadBytes, 0);
  h.writeUInt8(LINK_FRAME_KIND, 4);
  h.writeUInt32BE(channel, 5);
  h.writeUInt8(fromOpener ? 1 : 0, 9);
  h.writeUInt32BE(payloadBytes, 10);
  return h;
}

/** A transport that writes nothing: for a channel that failed before it began. */
const NOWHERE: ChannelTransport = { write: () => undefined, end: () => undefined, destroy: () => undefined };

/** One link's channels: those this side opened (outbound), and those the peer opened (inbound). */
export class Link {
  private nextChannel = 1;
  readonly outbound = new Map<number, ChannelEvents>();
  readonly inbound = new Map<number, InboundChannel>();
  lost: Error | undefined;
  private readonly write: (chunk: Uint8Array) => void;

  constructor(
    /** The peer, for messages: the address dialled, or where an accepted link came from. */
    readonly address: string,
    readonly conn: FrameConnection,
  ) {
    this.write = gatheredWrites(conn.socket);
  }

  allocate(): number {
    return this.nextChannel++;
  }

  /**
   * Write one channel's data-plane frame (`frame` with its length prefix, as elementFrame makes it) as a
   * LinkFrame: its header, then the frame's payload as it is (no copy of the records), gathered with
   * the link's other writes of this synchronous run into one writev.
   */
  send(channel: number, fromOpener: boolean, frame: Uint8Array): void {
    if (this.conn.socket.destroyed) return;
    this.write(linkFrameHeader(channel, fromOpener, frame.length - FRAME_HEADER_BYTES));
    this.write(frame.subarray(FRAME_HEADER_BYTES));
  }

  sendMessage(channel: number, fromOpener: boolean, m: Message): void {
    if (this.conn.socket.destroyed) return;
    this.write(encodeFrame(makeMessage('LinkFrame', { channel, fromOpener, frame: encodeMessage(m) })));
  }
}

export interface LinkMuxOptions {
  /** The subtask inputs channels are opened to. */
  targets: InboundTargets;
  /** What a link is called in messages ('mesh link', 'data link'). */
  noun: string;
  /** @default DEFAULT_CHANNEL_CREDITS */
  credits?: number;
  log?: Logger;
  metrics?: ClinkMetrics;
}

export class LinkMux {
  private readonly links = new Set<Link>();

  constructor(private readonly options: LinkMuxOptions) {}

  /**
   * Carry channels over `conn` from now on: read its frames (after `first`, a frame already read from
   * it) until it closes, then fail every channel over it that has not ended. `onLost` hears the loss.
   */
  attach(address: string, conn: FrameConnection, first?: Message, onLost?: (link: Link) => void): Link {
    const link = new Link(address, conn);
    this.links.add(link);
    if (first) this.onFrame(link, first);
    conn.start({ onRead: (m) => this.onFrame(link, m), onMessage: () => undefined });
    void conn.closed.then(({ error }) => {
      this.links.delete(link);
      this.onLost(link, error);
      onLost?.(link);
    });
    return link;
  }

  /** The transport of a new channel over `link` (undefined: there is none to `address`), opened with `hello`. */
  open(
    link: Link | undefined,
    address: string,
    hello: Omit<MessageOf<'DataHello'>, 'type'>,
    events: ChannelEvents,
  ): ChannelTransport {
    if (!link || link.lost) {
      const err = link?.lost ?? new PeerLostError(`no ${this.options.noun} to ${address}`);
      queueMicrotask(() => events.lost(err));
      return NOWHERE;
    }
    const channel = link.allocate();
    link.outbound.set(channel, events);
    link.sendMessage(channel, true, makeMessage('DataHello', hello));
    return {
      write: (frame) => link.send(channel, true, frame),
      end: () => link.outbound.delete(channel),
      destroy: () => {
        if (link.outbound.delete(channel))
          link.sendMessage(channel, true, makeMessage('DataRefused', { reason: ABANDONED }));
      },
    };
  }

  /** A frame read from `link`: consumed here, synchronously, in the order read. */
  private onFrame(link: Link, m: Message): boolean {
    if (m.type !== 'LinkFrame') {
      this.options.log?.warn(
        { peer: link.address },
        `${this.options.noun} from ${link.address} sent ${m.type}, not a LinkFrame: dropped`,
      );
      return true;
    }
    const inner = decodeMessage(m.frame);
    if (m.fromOpener) this.toReceiver(link, m.channel, inner, m.frame.length);
    else this.toSender(link, m.channel, inner);
    return true;
  }

  /** A frame for an inbound channel (the peer opened it). */
  private toReceiver(link: Link, channel: number, m: Message, bytes: number): void {
    if (m.type === 'DataHello') {
      try {
        const { queue, channel: number, labels } = this.options.targets.resolve(m);
        // A credit of one, the common case, is one frame encoded once: only the link header is new.
        const grant = (credits: number, batchLimit: number): void =>
          link.send(channel, false, creditFrame(credits, batchLimit));
        link.inbound.set(
          channel,
          new InboundChannel(
            queue,
            number,
            labels,
            grant,
            this.options.credits ?? DEFAULT_CHANNEL_CREDITS,
            this.options.metrics,
          ),
        );
      } catch (err) {
        if (!(err instanceof ChannelRefused)) throw err;
        this.options.log?.warn({ peer: link.address }, `data channel from ${link.address} ${err.message}`);
        link.sendMessage(channel, false, makeMessage('DataRefused', { reason: err.message }));
      }
      return;
    }
    if (m.type === 'DataRefused') {
      link.inbound.delete(channel); // the sender stopped: as a connection of its own would have closed
      return;
    }
    const inbound = link.inbound.get(channel);
    if (!inbound) return; // refused, or cut off: what was in flight is dropped
    try {
      if (inbound.take(m, bytes)) link.inbound.delete(channel);
    } catch (err) {
      link.inbound.delete(channel);
      this.options.log?.warn(
        { peer: link.address },
        `data channel ${channel} from ${link.address} cut off: ${(err as Error).message}`,
      );
      link.sendMessage(channel, false, makeMessage('DataRefused', { reason: (err as Error).message }));
    }
  }

  /** A frame for an outbound channel (this side opened it). */
  private toSender(link: Link, channel: number, m: Message): void {
    const events = link.outbound.get(channel);
    if (!events) return;
    if (m.type === 'DataCredit') events.credit(m.credits, m);
    else if (m.type === 'DataRefused') {
      link.outbound.delete(channel);
      events.lost(new PeerLostError(`data channel to ${link.address} ${m.reason}`));
    } else {
      link.outbound.delete(channel);
      events.lost(new PeerLostError(`unexpected ${m.type} from the data receiver at ${link.address}`));
    }
  }

  /** The link is gone: every channel over it that has not ended fails. */
  private onLost(link: Link, error: Error | undefined): void {
    link.lost = new PeerLostError(`${this.options.noun} to ${link.address} closed${error ? `: ${error.message}` : ''}`);
    for (const events of link.outbound.values()) events.lost(link.lost);
    link.outbound.clear();
    link.inbound.clear();
  }

  /** Close every link. */
  close(): void {
    for (const link of this.links) link.conn.close();
  }
}
