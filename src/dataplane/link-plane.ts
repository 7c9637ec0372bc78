/**
 * LinkPlane: a data plane over one full-duplex link per pair of processes (a mesh run's links, design
 * record 017). Every channel between two processes shares their link: each of its frames travels as a
 * LinkFrame naming the channel (numbered by the process that opened it) and its direction. A channel
 * opens with its DataHello, exactly as over a connection of its own; its credits, elements and end are
 * the same frames, so flow control stays per channel: one slow receiver holds back its own sender, not
 * the link. A receiver turns a channel away with DataRefused.
 */
import { PeerLostError } from '../errors.js';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { gatheredWrites, type FrameConnection } from '../net/index.js';
import { decodeMessage, encodeFrame, encodeMessage, makeMessage, MessageKind, type Message } from '../protocol/index.js';
import { ChannelRefused, creditMessage, DEFAULT_CHANNEL_CREDITS, InboundChannel, InboundTargets, type InboundTarget } from './inbound.js';
import { RemoteChannel, type ChannelEvents } from './remote-channel.js';
import type { DataPlane } from './server.js';

const FRAME_HEADER_BYTES = 4;
/** A LinkFrame's bytes before its inner payload: length, kind, channel, fromOpener, the payload's length. */
const LINK_HEADER_BYTES = 4 + 1 + 4 + 1 + 4;
const LINK_FRAME_KIND = MessageKind.LinkFrame;

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

export interface LinkPlaneOptions {
  /** The link to each peer process, by the address its channels are opened to (`host:port`). */
  links: ReadonlyMap<string, FrameConnection>;
  /** This process's own port in those addresses (what SubtaskListening reports). */
  port: number;
  /** @default DEFAULT_CHANNEL_CREDITS */
  credits?: number;
  log?: Logger;
  metrics?: ClinkMetrics;
}

/** One link's channels: those this side opened (outbound), and those the peer opened (inbound). */
class Link {
  private nextChannel = 1;
  readonly outbound = new Map<number, ChannelEvents>();
  readonly inbound = new Map<number, InboundChannel>();
  lost: Error | undefined;
  private readonly write: (chunk: Uint8Array) => void;

  constructor(
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

export class LinkPlane implements DataPlane {
  private readonly targets: InboundTargets;
  private readonly links = new Map<string, Link>();
  readonly port: number;

  constructor(private readonly options: LinkPlaneOptions) {
    this.port = options.port;
    this.targets = new InboundTargets(options.metrics);
    for (const [address, conn] of options.links) {
      const link = new Link(address, conn);
      this.links.set(address, link);
      conn.start({ onRead: (m) => this.onFrame(link, m), onMessage: () => undefined });
      void conn.closed.then(({ error }) => this.onLost(link, error));
    }
  }

  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void {
    this.targets.register(jobId, attempt, taskId, subtask, target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.unregister(jobId, attempt, taskId, subtask);
  }

  open(...[host, port, hello, onError, metrics, labels]: Parameters<DataPlane['open']>): RemoteChannel {
    const link = this.links.get(`${host}:${port}`);
    return new RemoteChannel(
      (events) => {
        if (!link) {
          queueMicrotask(() => events.lost(new PeerLostError(`no mesh link to ${host}:${port}: it is not a member of this run`)));
          return { write: () => undefined, end: () => undefined, destroy: () => undefined };
        }
        if (link.lost) {
          const lost = link.lost;
          queueMicrotask(() => events.lost(lost));
          return { write: () => undefined, end: () => undefined, destroy: () => undefined };
        }
        const channel = link.allocate();
        link.outbound.set(channel, events);
        link.sendMessage(channel, true, makeMessage('DataHello', hello));
        return {
          write: (frame) => link.send(channel, true, frame),
          end: () => link.outbound.delete(channel),
          destroy: () => link.outbound.delete(channel),
        };
      },
      onError,
      metrics,
      labels,
    );
  }

  /** A frame read from `link`: consumed here, synchronously, in the order read. */
  private onFrame(link: Link, m: Message): boolean {
    if (m.type !== 'LinkFrame') {
      this.options.log?.warn({ peer: link.address }, `mesh link to ${link.address} sent ${m.type}, not a LinkFrame: dropped`);
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
        const { queue, channel: number, labels } = this.targets.resolve(m);
        const grant = (credits: number): void => link.sendMessage(channel, false, creditMessage(credits));
        link.inbound.set(channel, new InboundChannel(queue, number, labels, grant, this.options.credits ?? DEFAULT_CHANNEL_CREDITS, this.options.metrics));
      } catch (err) {
        if (!(err instanceof ChannelRefused)) throw err;
        this.options.log?.warn({ peer: link.address }, `data channel from ${link.address} ${err.message}`);
        link.sendMessage(channel, false, makeMessage('DataRefused', { reason: err.message }));
      }
      return;
    }
    const inbound = link.inbound.get(channel);
    if (!inbound) return; // refused, or cut off: what was in flight is dropped
    try {
      if (inbound.take(m, bytes)) link.inbound.delete(channel);
    } catch (err) {
      link.inbound.delete(channel);
      this.options.log?.warn({ peer: link.address }, `data channel ${channel} from ${link.address} cut off: ${(err as Error).message}`);
      link.sendMessage(channel, false, makeMessage('DataRefused', { reason: (err as Error).message }));
    }
  }

  /** A frame for an outbound channel (this side opened it). */
  private toSender(link: Link, channel: number, m: Message): void {
    const events = link.outbound.get(channel);
    if (!events) return;
    if (m.type === 'DataCredit') events.credit(m.credits, m.columns);
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
    link.lost = new PeerLostError(`mesh link to ${link.address} closed${error ? `: ${error.message}` : ''}`);
    for (const events of link.outbound.values()) events.lost(link.lost);
    link.outbound.clear();
    link.inbound.clear();
  }

  /** Close every link. */
  close(): void {
    for (const link of this.links.values()) link.conn.close();
  }
}
