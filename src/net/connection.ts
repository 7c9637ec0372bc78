/**
 * FrameConnection: one peer's frames, read and dispatched. The read loop decodes each frame and either
 * answers it on the spot (`onRead`, for heartbeats) or queues it on the connection's FIFO dispatch
 * chain, so a slow handler never holds the reader or a heartbeat answer. The dispatch backlog is
 * bounded. Anything that goes wrong with a frame (it does not decode, its header is over the cap, its
 * handler throws, the backlog overflows) costs this peer its connection: logged once, counted in
 * clink_malformed_frames_total, never an unhandled rejection.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { decodeMessage, encodeFrame, FrameDecodeError, FrameTooLargeError, type Message } from '../protocol/index.js';
import { FrameMemoryError } from './frame-budget.js';
import { FrameReader, FrameTimeoutError, type FrameReaderOptions } from './frame-reader.js';
import type { PeerRejections, RejectionReason } from './rejections.js';
import { WrongProtocolError } from './sniff.js';

export const DEFAULT_MAX_DISPATCH_BACKLOG_FRAMES = 10_000;
export const DEFAULT_MAX_DISPATCH_BACKLOG_BYTES = 64 * 1024 * 1024;

export type CloseReason = 'eof' | 'malformed' | 'backlog' | 'timeout' | 'error' | 'closed';

/** The peer sent requests faster than they were handled (a client that never reads its replies). */
export class DispatchBacklogError extends FrameDecodeError {}

export interface ConnectionClosed {
  reason: CloseReason;
  error?: Error;
}

export interface FrameConnectionOptions extends FrameReaderOptions {
  /** The role of this node, for the malformed-frame metric's label. */
  role: string;
  log?: Logger;
  metrics?: ClinkMetrics;
  /** @default DEFAULT_MAX_DISPATCH_BACKLOG_FRAMES */
  maxDispatchBacklogFrames?: number;
  /** @default DEFAULT_MAX_DISPATCH_BACKLOG_BYTES */
  maxDispatchBacklogBytes?: number;
  /**
   * Handle frames already read when the connection ends cleanly (EOF or close()); they are dropped
   * only after a malformed frame, a timeout or a socket error. A peer's last frames before it hung up
   * (a worker's clean SubtaskFinished) are facts, not noise. @default false
   */
  dispatchAfterClose?: boolean;
  /**
   * The node's log of connections closed for what their peer did (one line per address per interval,
   * counted by reason). Without it each closure is logged as it happens.
   */
  rejections?: PeerRejections;
}

export interface FrameHandlers {
  /** Called by the reader for every frame; return true to consume it there (not dispatched). */
  onRead?(message: Message): boolean;
  /** Called in order, one at a time, for every frame not consumed by onRead. */
  onMessage(message: Message): void | Promise<void>;
}

export class FrameConnection {
  readonly reader: FrameReader;
  readonly peer: string;
  /** Settles (never rejects) once the connection is closed. Frames already queued may still be handled. */
  readonly closed: Promise<ConnectionClosed>;
  private resolveClosed!: (c: ConnectionClosed) => void;
  private closeInfo: ConnectionClosed | undefined;
  private chain: Promise<void> = Promise.resolve();
  private backlogFrames = 0;
  private backlogBytes = 0;
  private started = false;
  /** When the last frame was read (the watchdog's last_seen). */
  lastFrameAt = Date.now();

  constructor(
    readonly socket: Socket,
    private options: FrameConnectionOptions,
  ) {
    this.peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    this.reader = new FrameReader(socket, options);
    this.closed = new Promise((r) => (this.resolveClosed = r));
    socket.once('close', () => this.finish({ reason: 'closed' }));
  }

  /** Start reading and dispatching. */
  start(handlers: FrameHandlers): void {
    if (this.started) throw new Error('FrameConnection already started');
    this.started = true;
    this.readLoop(handlers).catch((err: unknown) => this.dropPeer(err as Error));
  }

  /** Read exactly one frame now (a connection's first frame), before start(). */
  async readOne(): Promise<Message | null> {
    const payload = await this.reader.next();
    if (payload === null) return null;
    this.lastFrameAt = Date.now();
    return decodeMessage(payload);
  }

  private async readLoop(handlers: FrameHandlers): Promise<void> {
    for (;;) {
      const payload = await this.reader.next();
      if (payload === null) {
        this.finish({ reason: 'eof' });
        return;
      }
      const message = decodeMessage(payload);
      this.lastFrameAt = Date.now();
      if (handlers.onRead?.(message)) continue;
      this.enqueue(message, payload.length, handlers);
      if (this.closeInfo) return;
    }
  }

  private enqueue(message: Message, bytes: number, handlers: FrameHandlers): void {
    const maxFrames = this.options.maxDispatchBacklogFrames ?? DEFAULT_MAX_DISPATCH_BACKLOG_FRAMES;
    const maxBytes = this.options.maxDispatchBacklogBytes ?? DEFAULT_MAX_DISPATCH_BACKLOG_BYTES;
    // One frame is always admitted to an empty backlog, whatever its size.
    if (this.backlogFrames > 0 && (this.backlogFrames + 1 > maxFrames || this.backlogBytes + bytes > maxBytes)) {
      this.dropPeer(
        new DispatchBacklogError(
          `dispatch backlog over its bound (${this.backlogFrames} frames, ${this.backlogBytes} bytes)`,
        ),
      );
      return;
    }
    this.backlogFrames++;
    this.backlogBytes += bytes;
    this.chain = this.chain.then(async () => {
      try {
        if (this.dispatchable) await handlers.onMessage(message);
      } catch (err) {
        this.dropPeer(err as Error, `handling ${message.type} failed`);
      } finally {
        this.backlogFrames--;
        this.backlogBytes -= bytes;
      }
    });
  }

  /** Whether queued frames are still handled: while open, and after a clean end if dispatchAfterClose. */
  private get dispatchable(): boolean {
    const c = this.closeInfo;
    return !c || (this.options.dispatchAfterClose === true && (c.reason === 'eof' || c.reason === 'closed'));
  }

  /** Lower the dispatch backlog's bounds once the peer's role is known (a client's requests). */
  limitBacklog(
    frames: number,
    bytes = this.options.maxDispatchBacklogBytes ?? DEFAULT_MAX_DISPATCH_BACKLOG_BYTES,
  ): void {
    this.options = { ...this.options, maxDispatchBacklogFrames: frames, maxDispatchBacklogBytes: bytes };
  }

  /** Write one frame directly (clients, and replies to a peer not yet admitted). */
  send(message: Message): boolean {
    if (this.socket.destroyed) return false;
    return this.socket.write(encodeFrame(message));
  }

  private dropPeer(err: Error, context?: string): void {
    if (this.closeInfo) return;
    // A frame that does not decode, is over its cap, or whose handler fails is the peer's fault;
    // a timeout or a socket error (a reset) is not a malformed frame.
    const reason: CloseReason =
      err instanceof FrameTimeoutError
        ? 'timeout'
        : err instanceof DispatchBacklogError
          ? 'backlog'
          : err instanceof FrameDecodeError || err instanceof FrameTooLargeError || context !== undefined
            ? 'malformed'
            : 'error';
    const what = context ? `${context}: ${err.message}` : err.message;
    if (reason === 'malformed' || reason === 'backlog')
      this.options.metrics?.malformedFrames.inc({ role: this.options.role });
    const rejections = this.options.rejections;
    // A handler that failed is ours to debug (its stack); what the peer sent or did is not.
    const stack = context !== undefined ? { err } : {};
    if (rejections) rejections.record(this.peer, rejectionReason(err, reason), what);
    else if (reason === 'malformed' || reason === 'backlog')
      this.options.log?.warn(
        { peer: this.peer, ...stack },
        `malformed frame from ${this.peer}, closing its connection: ${what}`,
      );
    else if (reason === 'timeout')
      this.options.log?.warn({ peer: this.peer }, `connection from ${this.peer} timed out: ${what}`);
    else this.options.log?.info({ peer: this.peer }, `connection to ${this.peer} failed: ${what}`);
    if (rejections && context !== undefined)
      this.options.log?.warn({ peer: this.peer, err }, `${context} for ${this.peer}`);
    this.finish({ reason, error: err });
  }

  private finish(info: ConnectionClosed): void {
    if (this.closeInfo) return;
    this.closeInfo = info;
    this.reader.close();
    if (!this.socket.destroyed) this.socket.destroy();
    this.resolveClosed(info);
  }

  /** Settles when every frame queued so far has been handled (after close: the last of them). */
  drained(): Promise<void> {
    return this.chain;
  }

  /** Close the connection (idempotent). */
  close(): void {
    this.finish({ reason: 'closed' });
  }
}

/** The reason a closure for `err` is counted under (`reason`: how the connection saw it, when known). */
export function rejectionReason(err: Error, reason?: CloseReason): RejectionReason {
  if (err instanceof FrameMemoryError) return 'memory';
  if (err instanceof FrameTooLargeError) return 'too_large';
  if (err instanceof WrongProtocolError) return 'wrong_protocol';
  if (err instanceof DispatchBacklogError) return 'backlog';
  if (err instanceof FrameDecodeError) return 'malformed';
  if (err instanceof FrameTimeoutError) return 'timeout';
  if (reason === 'malformed' || reason === 'backlog' || reason === 'timeout') return reason;
  return 'error';
}
