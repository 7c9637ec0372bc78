/**
 * DataServer: a worker's one data listener. Each inbound connection carries one channel (an edge, an
 * upstream subtask, a downstream subtask); its first frame, DataHello, names it, and the server hands
 * its record batches to the downstream subtask's InputQueue. Flow control is credit-based: the server
 * grants the sender a fixed number of batches, and one more each time the subtask takes a batch, so
 * what a channel can put in memory here is bounded by its credits. A sender that exceeds them is cut off.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { FrameConnection, secureAccepted, type TlsServerConfig } from '../net/index.js';
import { BATCH, END, type InputQueue } from '../runtime/index.js';
import { decodeMessage, encodeFrame, makeMessage, MAX_FIRST_FRAME_BYTES } from '../protocol/index.js';
import { frameElement } from './frames.js';
import { helloMacValid } from './hello-mac.js';
import { setTimer } from '../util/index.js';
import { listenError } from '../errors.js';

/** Record batches a channel may have in flight or queued at its receiver. @default 4 */
export const DEFAULT_CHANNEL_CREDITS = 4;

/** A subtask's input, as the data server sees it. */
export interface InboundTarget {
  queue: InputQueue;
  /** Its deploy attempt's data secret: a connection whose DataHello MAC does not verify under it is refused. */
  secret?: string;
  /** The channel number of (edge, upstream subtask) at this subtask, or undefined if it has none. */
  channelOf(edgeIndex: number, upstreamSubtask: number): number | undefined;
}

const key = (jobId: string, attempt: number, taskId: string, subtask: number): string => `${jobId}\u0000${attempt}\u0000${taskId}\u0000${subtask}`;
const ONE_CREDIT = encodeFrame(makeMessage('DataCredit', { credits: 1 }));

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

export class DataServer {
  private readonly server: Server;
  private readonly targets = new Map<string, InboundTarget>();
  private readonly connections = new Set<FrameConnection>();
  port = 0;

  private constructor(private readonly options: DataServerOptions) {
    this.server = createServer((s) => this.accept(s));
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
    this.targets.set(key(jobId, attempt, taskId, subtask), target);
  }

  unregister(jobId: string, attempt: number, taskId: string, subtask: number): void {
    this.targets.delete(key(jobId, attempt, taskId, subtask));
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
    if (hello.type !== 'DataHello') throw this.refused('not_hello', `expected DataHello, got ${hello.type}`);
    const target = this.targets.get(key(hello.jobId, hello.attempt, hello.downstreamTaskId, hello.downstreamSubtask));
    if (!target) throw this.refused('unknown_subtask', `no subtask ${hello.downstreamTaskId}#${hello.downstreamSubtask} of job ${hello.jobId} attempt ${hello.attempt} here`);
    const channel = target.channelOf(hello.edgeIndex, hello.upstreamSubtask);
    if (channel === undefined) throw this.refused('unknown_channel', `subtask ${hello.downstreamTaskId}#${hello.downstreamSubtask} has no input from edge ${hello.edgeIndex}`);
    if (target.secret !== undefined && !helloMacValid(target.secret, hello)) {
      throw this.refused('bad_secret', `its DataHello for ${hello.downstreamTaskId}#${hello.downstreamSubtask} of job ${hello.jobId} does not prove the attempt's secret`);
    }
    const labels = {
      job: hello.jobId,
      edge: String(hello.edgeIndex),
      from: `${hello.upstreamTaskId}#${hello.upstreamSubtask}`,
      to: `${hello.downstreamTaskId}#${hello.downstreamSubtask}`,
    };
    const { queue } = target;
    const credits = this.options.credits ?? DEFAULT_CHANNEL_CREDITS;
    let outstanding = credits;
    const socket = conn.socket;
    const returnCredit = (): void => {
      outstanding++;
      if (!socket.destroyed) socket.write(ONE_CREDIT);
    };
    socket.write(encodeFrame(makeMessage('DataCredit', { credits })));
    for (;;) {
      const payload = await conn.reader.next();
      if (payload === null) throw new Error('the sender closed before its DataEnd');
      const e = frameElement(decodeMessage(payload), channel);
      if (!e) throw new Error(`unexpected frame on a data connection`);
      if (e.kind === BATCH) {
        if (outstanding <= 0) throw new Error(`the sender exceeded its ${credits} credits`);
        outstanding--;
        e.onTaken = returnCredit;
        this.options.metrics?.channelRecordsReceived.inc(labels, e.values.length);
        this.options.metrics?.channelBytesReceived.inc(labels, payload.length + 4);
      }
      queue.push(e);
      if (e.kind === END) {
        conn.close();
        return;
      }
    }
  }

  private refused(reason: string, why: string): Error {
    this.options.metrics?.dataConnectionsRefused.inc({ reason });
    return new Error(`refused: ${why}`);
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.close();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
