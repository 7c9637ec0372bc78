/**
 * RemoteChannel: the sending end of one data connection, used by a RecordWriter like a local queue.
 * Flow control is credit-based, as in Flink: the receiver grants one credit per record batch it has
 * room for, and returns one each time its task takes a batch. Batches wait here until there is credit;
 * control elements (watermarks, status, end) travel in band, in order, behind them. The channel reports
 * itself full while anything waits, so its task stops pulling input: a slow receiver slows the source,
 * and memory on both sides is bounded by the credits, never by the data rate.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { PeerLostError } from '../errors.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { FrameReader, tlsConnectOptions, type TlsClientConfig } from '../net/index.js';
import { decodeMessage, encodeFrame, makeMessage, type MessageOf } from '../protocol/index.js';
import { BATCH, END, type ChannelSink, type StreamElement } from '../runtime/index.js';
import { elementFrame } from './frames.js';

export interface ChannelLabels {
  job: string;
  edge: string;
  from: string;
  to: string;
}

export class RemoteChannel implements ChannelSink {
  private readonly socket: Socket;
  private readonly reader: FrameReader;
  private failure: Error | undefined;
  private credits = 0;
  private readonly pending: StreamElement[] = [];
  private readonly waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private ended = false;
  /** DataEnd has been written: what comes after (a reset by the closing receiver) is not a failure. */
  private endWritten = false;
  private blockedSince = 0;

  constructor(
    host: string,
    port: number,
    hello: Omit<MessageOf<'DataHello'>, 'type'>,
    private readonly onError: (err: Error) => void,
    private readonly metrics?: ClinkMetrics,
    private readonly labels?: ChannelLabels,
    tls?: TlsClientConfig,
  ) {
    // Over TLS the hello is queued until the handshake is done; a data peer's certificate must name the host it advertised.
    this.socket = tls ? tlsConnect({ host, port, ...tlsConnectOptions(host, tls) }) : connect({ host, port, noDelay: true });
    this.socket.setNoDelay(true);
    this.socket.write(encodeFrame(makeMessage('DataHello', hello)));
    this.reader = new FrameReader(this.socket);
    // Once DataEnd is written the stream is whole: the receiver closes on reading it, and over TLS that
    // close can reset this side (its close_notify arrives unread), which is no failure.
    this.socket.on('error', (err) => {
      if (!this.endWritten) this.fail(new PeerLostError(`data connection to ${host}:${port} failed: ${err.message}`, { cause: err }));
    });
    this.socket.on('close', () => {
      if (!this.ended) this.fail(new PeerLostError(`data connection to ${host}:${port} closed before the stream ended`));
    });
    void this.readCredits();
  }

  private async readCredits(): Promise<void> {
    try {
      for (let f = await this.reader.next(); f; f = await this.reader.next()) {
        const m = decodeMessage(f);
        if (m.type !== 'DataCredit') throw new Error(`unexpected ${m.type} from a data receiver`);
        this.credits += m.credits;
        this.transmit();
      }
    } catch (err) {
      if (!this.ended && !this.endWritten) this.fail(new PeerLostError(`data connection failed: ${(err as Error).message}`, { cause: err }));
    }
  }

  push(element: StreamElement): void {
    if (this.failure || this.ended) return;
    if (element.kind === END) this.ended = true;
    this.pending.push(element);
    this.transmit();
  }

  /** Send what waits, in order, while batches have credit. */
  private transmit(): void {
    while (this.pending.length > 0 && !this.failure) {
      const e = this.pending[0]!;
      if (e.kind === BATCH) {
        if (this.credits <= 0) break;
        this.credits--;
      }
      this.pending.shift();
      const frame = elementFrame(e);
      this.socket.write(frame);
      if (e.kind === BATCH && this.metrics && this.labels) {
        this.metrics.channelRecordsSent.inc(this.labels, e.values.length);
        this.metrics.channelBytesSent.inc(this.labels, frame.length);
      }
      if (e.kind === END) {
        this.endWritten = true;
        this.socket.end();
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
      if (this.metrics && this.labels) this.metrics.channelBackpressured.inc(this.labels, (performance.now() - this.blockedSince) / 1000);
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
    this.reader.close();
    this.socket.destroy();
    for (const w of this.waiters.splice(0)) w.reject(new Error('channel closed'));
  }
}
