/**
 * RemoteChannel: the sending end of one data connection, used by a RecordWriter like a local queue.
 * Elements are encoded and written at once; the channel reports itself full while the socket holds more
 * than its high-water mark unsent, and the writer then waits for it to drain.
 */
import { connect, type Socket } from 'node:net';
import { PeerLostError } from '../errors.js';
import { encodeFrame, makeMessage, type MessageOf } from '../protocol/index.js';
import { END, type ChannelSink, type StreamElement } from '../runtime/index.js';
import { elementFrame } from './frames.js';

/** Bytes a channel may hold unsent before its writer waits. @default 4 MiB */
export const DEFAULT_CHANNEL_HIGH_WATER_BYTES = 4 * 1024 * 1024;

export class RemoteChannel implements ChannelSink {
  private readonly socket: Socket;
  private failure: Error | undefined;
  private readonly drainWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];

  constructor(
    host: string,
    port: number,
    hello: Omit<MessageOf<'DataHello'>, 'type'>,
    private readonly onError: (err: Error) => void,
    private readonly highWaterBytes = DEFAULT_CHANNEL_HIGH_WATER_BYTES,
  ) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.write(encodeFrame(makeMessage('DataHello', hello)));
    this.socket.on('drain', () => this.wakeDrain());
    this.socket.on('error', (err) => this.fail(new PeerLostError(`data connection to ${host}:${port} failed: ${err.message}`, { cause: err })));
    this.socket.on('close', () => {
      if (!this.ended) this.fail(new PeerLostError(`data connection to ${host}:${port} closed before the stream ended`));
    });
  }

  private ended = false;

  push(element: StreamElement): void {
    if (this.failure || this.socket.destroyed) return;
    this.socket.write(elementFrame(element));
    if (element.kind === END) {
      this.ended = true;
      this.socket.end();
    }
  }

  get isFull(): boolean {
    return this.socket.writableLength > this.highWaterBytes;
  }

  waitNotFull(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.isFull) return Promise.resolve();
    return new Promise((resolve, reject) => this.drainWaiters.push({ resolve, reject }));
  }

  private wakeDrain(): void {
    for (const w of this.drainWaiters.splice(0)) w.resolve();
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    for (const w of this.drainWaiters.splice(0)) w.reject(err);
    this.onError(err);
  }

  /** Close without ending the stream (the job was cancelled or failed). */
  destroy(): void {
    this.ended = true;
    this.socket.destroy();
    for (const w of this.drainWaiters.splice(0)) w.reject(new Error('channel closed'));
  }
}
