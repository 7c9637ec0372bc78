/**
 * DataServer: a worker's one data listener, and where its channels to other workers start. A channel
 * (an edge, an upstream subtask, a downstream subtask) travels on the data link between the two
 * processes, which carries every channel from the dialling one to the other (link-mux.ts, design record
 * 019), or, to a peer that does not take links, on a connection of its own. Either way its first frame,
 * DataHello, names it, and the server hands its elements to the downstream subtask's InputQueue under
 * credit-based flow control (inbound.ts).
 */
import { DEFAULT_MAX_INFLIGHT_FRAME_BYTES } from '../config/index.js';
import type { Server, Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import {
  FrameBudget,
  FrameConnection,
  gatheredWrites,
  isTlsFailure,
  PeerRejections,
  rejectionReason,
  secureAccepted,
  dial,
  listenOn,
  type TlsClientConfig,
  type TlsServerConfig,
} from '../net/index.js';
import { decodeMessage, MAX_FIRST_FRAME_BYTES, type MessageOf } from '../protocol/index.js';
import { setTimer } from '../util/index.js';
import {
  ChannelRefused,
  creditFrame,
  DEFAULT_CHANNEL_CREDITS,
  InboundChannel,
  InboundTargets,
  type ChannelLabels,
  type InboundTarget,
} from './inbound.js';
import { LinkMux, type Link } from './link-mux.js';
import { RemoteChannel, tcpTransport } from './remote-channel.js';

/** A channel to open: to the subtask `hello` names, at the process listening on host:port. */
export interface ChannelOpen {
  host: string;
  port: number;
  /** The peer takes data links (its SubtaskListening said so): the channel may travel on one. */
  link?: boolean;
  hello: Omit<MessageOf<'DataHello'>, 'type'>;
  onError: (err: Error) => void;
  metrics?: ClinkMetrics;
  labels?: ChannelLabels;
  tls?: TlsClientConfig;
}

/** Where a process's subtasks take channels in and open channels out: its data server, or a mesh's links. */
export interface DataPlane {
  /** The port a peer's channels reach this process on (what SubtaskListening reports). */
  readonly port: number;
  /** Whether peers may send channels here on a data link (SubtaskListening.dataLinks). */
  readonly takesLinks: boolean;
  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void;
  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void;
  /** The sending end of a channel. */
  open(o: ChannelOpen): RemoteChannel;
}

/** How a worker's channels to other workers travel: on one data link per peer, or a connection each. */
export type DataTransport = 'link' | 'channel';

export interface DataServerOptions {
  host: string;
  port?: number;
  log?: Logger;
  metrics?: ClinkMetrics;
  /** How long a new data connection may take to send its DataHello. @default 10,000 */
  helloTimeoutMs?: number;
  /** @default DEFAULT_CHANNEL_CREDITS */
  credits?: number;
  /** The data port's TLS: each connection is wrapped, its handshake bounded by the hello timeout. */
  tls?: TlsServerConfig;
  /** `channel`: take and open no data links, only a connection per channel. @default 'link' */
  transport?: DataTransport;
  /** What every data connection's partial frames may hold together (--max-inflight-frame-bytes). @default 256 MiB */
  maxInflightFrameBytes?: number;
}

export class DataServer implements DataPlane {
  private server!: Server;
  private readonly targets: InboundTargets;
  private readonly connections = new Set<FrameConnection>();
  private readonly mux: LinkMux;
  /** The links this process dialled, by the peer's `host:port`; each carries its channels to that peer. */
  private readonly dialled = new Map<string, Link>();
  readonly takesLinks: boolean;
  port = 0;
  /** Data connections closed for what their peer sent: a line per address per interval, counted by reason. */
  private readonly rejections: PeerRejections | undefined;
  private readonly budget: FrameBudget;

  private constructor(private readonly options: DataServerOptions) {
    this.rejections = options.log ? new PeerRejections('worker.data', options.log, options.metrics) : undefined;
    this.budget = new FrameBudget(options.maxInflightFrameBytes ?? DEFAULT_MAX_INFLIGHT_FRAME_BYTES);
    this.targets = new InboundTargets(options.metrics);
    this.takesLinks = options.transport !== 'channel';
    this.mux = new LinkMux({
      targets: this.targets,
      noun: 'data link',
      ...(options.credits !== undefined ? { credits: options.credits } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
  }

  static async start(options: DataServerOptions): Promise<DataServer> {
    const ds = new DataServer(options);
    ({ server: ds.server, port: ds.port } = await listenOn(
      options.host,
      options.port ?? 0,
      { port: 'the data port', host: '--data-host' },
      (s) => ds.accept(s),
    ));
    return ds;
  }

  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void {
    this.targets.register(jobId, attempt, taskId, subtask, target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.unregister(jobId, attempt, taskId, subtask);
  }

  open(o: ChannelOpen): RemoteChannel {
    if (!o.link || !this.takesLinks)
      return new RemoteChannel(tcpTransport(o.host, o.port, o.hello, o.tls), o.onError, o.metrics, o.labels);
    const address = `${o.host}:${o.port}`;
    return new RemoteChannel(
      (events) => this.mux.open(this.linkTo(address, o.host, o.port, o.tls), address, o.hello, events),
      o.onError,
      o.metrics,
      o.labels,
    );
  }

  /** The link to the data server at `address` (host:port), dialled now if there is none (its frames wait for the connect). */
  private linkTo(address: string, host: string, port: number, tls: TlsClientConfig | undefined): Link {
    const known = this.dialled.get(address);
    if (known && !known.lost) return known;
    // Over TLS what is written waits for the handshake; a data peer's certificate must name the host it advertised.
    const socket = dial(host, port, tls);
    socket.setNoDelay(true);
    socket.on('error', () => undefined); // reported by the connection's reader while it reads; none is left unhandled after
    const conn = new FrameConnection(socket, { role: 'worker.data', budget: this.budget, ...this.logging() });
    this.connections.add(conn);
    this.options.metrics?.dataLinks.inc({ direction: 'out' });
    const link = this.mux.attach(address, conn, undefined, (lost) => {
      this.connections.delete(conn);
      this.options.metrics?.dataLinks.dec({ direction: 'out' });
      if (this.dialled.get(address) === lost) this.dialled.delete(address);
    });
    this.dialled.set(address, link);
    return link;
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true);
    const conn = new FrameConnection(this.options.tls ? secureAccepted(socket, this.options.tls) : socket, {
      role: 'worker.data',
      firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES,
      budget: this.budget,
      ...this.logging(),
    });
    this.connections.add(conn);
    void conn.closed.then(() => this.connections.delete(conn));
    this.serve(conn).catch((err: unknown) => {
      const e = err as Error;
      const reason =
        e instanceof ChannelRefused ? 'refused' : this.options.tls && isTlsFailure(e) ? 'tls' : rejectionReason(e);
      if (this.rejections) this.rejections.record(conn.peer, reason, `data connection dropped: ${e.message}`);
      conn.close();
    });
  }

  /** What a data connection logs and counts through. */
  private logging(): { log?: Logger; metrics?: ClinkMetrics; rejections?: PeerRejections } {
    return {
      ...(this.options.log ? { log: this.options.log } : {}),
      ...(this.options.metrics ? { metrics: this.options.metrics } : {}),
      ...(this.rejections ? { rejections: this.rejections } : {}),
    };
  }

  private async serve(conn: FrameConnection): Promise<void> {
    const timer = setTimer(() => conn.close(), this.options.helloTimeoutMs ?? 10_000);
    let hello;
    try {
      hello = await conn.readOne();
    } finally {
      clearTimeout(timer);
    }
    if (!hello) return;
    if (hello.type === 'LinkFrame') {
      this.acceptLink(conn, hello);
      return;
    }
    const { queue, channel, labels } = this.targets.resolve(hello);
    const socket = conn.socket;
    const write = gatheredWrites(socket);
    const inbound = new InboundChannel(
      queue,
      channel,
      labels,
      (credits, batchLimit) => {
        if (!socket.destroyed) write(creditFrame(credits, batchLimit));
      },
      this.options.credits ?? DEFAULT_CHANNEL_CREDITS,
      this.options.metrics,
    );
    for (;;) {
      const payload = await conn.reader.next();
      if (payload === null) throw new Error('the sender closed before its DataEnd');
      if (inbound.take(decodeMessage(payload), payload.length)) {
        conn.close();
        return;
      }
    }
  }

  /**
   * A data link: its first frame must open a channel this process takes (a DataHello proving its
   * attempt's secret), as a connection of its own would; after that it carries any channels its dialler
   * opens, until either side closes it.
   */
  private acceptLink(conn: FrameConnection, first: MessageOf<'LinkFrame'>): void {
    if (!this.takesLinks) {
      this.options.metrics?.dataConnectionsRefused.inc({ reason: 'links_off' });
      throw new Error('it opened a data link, which this worker does not take (--data-transport channel)');
    }
    this.options.metrics?.dataLinks.inc({ direction: 'in' });
    const link = this.mux.attach(conn.peer, conn, first, () =>
      this.options.metrics?.dataLinks.dec({ direction: 'in' }),
    );
    if (link.inbound.size === 0) conn.close(); // its first channel was refused (and told why)
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.close();
    await new Promise<void>((r) => this.server.close(() => r()));
    this.rejections?.close();
  }
}
