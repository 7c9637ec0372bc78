/**
 * DataServer: a worker's one data listener. Each inbound connection carries one channel (an edge, an
 * upstream subtask, a downstream subtask); its first frame, DataHello, names it, and the server hands
 * its elements to the downstream subtask's InputQueue under credit-based flow control (inbound.ts).
 * Its outbound channels are connections of their own to the peers' data servers.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { FrameConnection, gatheredWrites, secureAccepted, type TlsClientConfig, type TlsServerConfig } from '../net/index.js';
import { decodeMessage, MAX_FIRST_FRAME_BYTES, type MessageOf } from '../protocol/index.js';
import { setTimer } from '../util/index.js';
import { listenError } from '../errors.js';
import { creditFrame, DEFAULT_CHANNEL_CREDITS, InboundChannel, InboundTargets, type ChannelLabels, type InboundTarget } from './inbound.js';
import { RemoteChannel, tcpTransport } from './remote-channel.js';

/** Where a process's subtasks take channels in and open channels out: its data server, or a mesh's links. */
export interface DataPlane {
  /** The port a peer's channels reach this process on (what SubtaskListening reports). */
  readonly port: number;
  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void;
  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void;
  /** The sending end of a channel to the subtask `hello` names, at the process listening on host:port. */
  open(
    host: string,
    port: number,
    hello: Omit<MessageOf<'DataHello'>, 'type'>,
    onError: (err: Error) => void,
    metrics?: ClinkMetrics,
    labels?: ChannelLabels,
    tls?: TlsClientConfig,
  ): RemoteChannel;
}

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
}

export class DataServer implements DataPlane {
  private readonly server: Server;
  private readonly targets: InboundTargets;
  private readonly connections = new Set<FrameConnection>();
  port = 0;

  private constructor(private readonly options: DataServerOptions) {
    this.server = createServer((s) => this.accept(s));
    this.targets = new InboundTargets(options.metrics);
  }

  static async start(options: DataServerOptions): Promise<DataServer> {
    const ds = new DataServer(options);
    await new Promise<void>((resolve, reject) => {
      ds.server.once('error', (err) => reject(listenError(err, options.host, options.port ?? 0, { port: 'the data port', host: '--data-host' })));
      ds.server.listen(options.port ?? 0, options.host, () => resolve());
    });
    ds.port = (ds.server.address() as { port: number }).port;
    return ds;
  }

  register(jobId: string, attempt: number, taskId: string, subtask: number, target: InboundTarget): void {
    this.targets.register(jobId, attempt, taskId, subtask, target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.unregister(jobId, attempt, taskId, subtask);
  }

  open(...[host, port, hello, onError, metrics, labels, tls]: Parameters<DataPlane['open']>): RemoteChannel {
    return new RemoteChannel(tcpTransport(host, port, hello, tls), onError, metrics, labels);
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true);
    const conn = new FrameConnection(this.options.tls ? secureAccepted(socket, this.options.tls) : socket, {
      role: 'worker.data',
      firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES,
      ...(this.options.log ? { log: this.options.log } : {}),
      ...(this.options.metrics ? { metrics: this.options.metrics } : {}),
    });
    this.connections.add(conn);
    void conn.closed.then(() => this.connections.delete(conn));
    this.serve(conn).catch((err: unknown) => {
      this.options.log?.warn({ err, peer: conn.peer }, `data connection from ${conn.peer} dropped: ${(err as Error).message}`);
      conn.close();
    });
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
    const { queue, channel, labels } = this.targets.resolve(hello);
    const socket = conn.socket;
    const write = gatheredWrites(socket);
    const inbound = new InboundChannel(
      queue,
      channel,
      labels,
      (credits) => {
        if (!socket.destroyed) write(creditFrame(credits));
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

  async close(): Promise<void> {
    for (const c of this.connections) c.close();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

