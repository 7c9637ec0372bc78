/**
 * FrameReader: yields frame payloads from a socket (TCP or TLS), trusting nothing the peer claims.
 * The header is checked against the cap before anything is allocated. A small body is held as the
 * chunks that actually arrived, joined once complete; a large one is copied as it arrives into one
 * buffer of its own, grown as bytes come (pages the peer has not sent are never touched, and the buffer
 * goes back to the system whole when freed, where thousands of socket chunks would stay in the
 * allocator), so memory follows the bytes received, never the length claimed. What a partial frame
 * holds is charged to the node's FrameBudget, shared by every reader: past it the peer is cut. Reads
 * are bounded by an idle timeout (no bytes), a whole-frame deadline (a peer trickling one byte at a
 * time) and a body deadline (a frame begun must end in time, even on a session that may be idle
 * between frames). The socket is paused while a frame waits to be taken (backpressure).
 */
import type { Duplex } from 'node:stream';
import { ClinkError } from '../errors.js';
import { FRAME_HEADER_BYTES, FrameDecodeError, FrameTooLargeError, MAX_FRAME_BYTES } from '../protocol/index.js';
import { reclaimMemory, setTimer } from '../util/index.js';
import type { FrameBudget } from './frame-budget.js';
import { sniffForeignProtocol, WrongProtocolError } from './sniff.js';

/** A body larger than this is read into one buffer of its own (data batches stay below it, on the chunk path). */
const CONTIGUOUS_BODY_BYTES = 1024 * 1024;
/**
 * A large body's buffer is never smaller than this (or than the frame): glibc serves allocations this
 * large by mmap whatever its dynamic threshold has grown to (at most 32 MiB on 64-bit), so the buffer
 * goes back to the system when freed; a smaller one could come from the heap and stay resident after.
 * Pages the peer has not sent are never touched, so they cost address space, not memory.
 */
const LARGE_BODY_MIN_BYTES = 32 * 1024 * 1024;
/** A partial frame of at least this much, dropped, is collected at once (reclaimMemory). */
const RECLAIM_BYTES = 16 * 1024 * 1024;

export class FrameTimeoutError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_FRAME_TIMEOUT', message);
  }
}

export interface FrameReaderOptions {
  /** Largest frame accepted. @default MAX_FRAME_BYTES (256 MiB) */
  maxFrameBytes?: number;
  /** Cap for the connection's first frame only (MAX_FIRST_FRAME_BYTES for an unauthenticated peer). */
  firstFrameMaxBytes?: number;
  /** A read fails when no byte arrives for this long while a frame is awaited. @default none */
  readTimeoutMs?: number;
  /** A frame must be complete within this long of being asked for. @default none */
  frameDeadlineMs?: number;
  /**
   * A frame must be complete within this long of its first byte: a peer that starts a frame and stalls
   * holds what it sent only this long, however idle it may otherwise be between frames. @default none
   */
  bodyDeadlineMs?: number;
  /** The node's budget for frames in flight, shared by its readers. @default none */
  budget?: FrameBudget;
}

export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The body length of the frame being read, once its header is in. */
  private bodyBytes = -1;
  private readonly ready: Buffer[] = [];
  private ended = false;
  private failure: Error | undefined;
  private waiter: { resolve: (b: Buffer | null) => void; reject: (e: Error) => void } | null = null;
  private framesRead = 0;
  private readTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private bodyTimer: NodeJS.Timeout | null = null;
  private readonly maxFrameBytes: number;
  /** A large frame's body, filled as it arrives (CONTIGUOUS_BODY_BYTES), and how much of it has. */
  private body: Buffer | undefined;
  private bodyFilled = 0;
  /** Bytes charged to the budget: what the partial frame holds. */
  private charged = 0;
  private readonly peer: string;

  constructor(
    private readonly socket: Duplex,
    private options: FrameReaderOptions = {},
  ) {
    this.maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    const s = socket as Duplex & { remoteAddress?: string; remotePort?: number };
    this.peer = `${s.remoteAddress ?? '?'}:${s.remotePort ?? '?'}`;
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('close', this.onEnd);
    socket.on('error', this.onError);
  }

  /** Change the bounds for later reads: admission lifts the first frame's deadlines once it is in. */
  configure(options: Partial<Pick<FrameReaderOptions, 'readTimeoutMs' | 'frameDeadlineMs' | 'bodyDeadlineMs'>>): void {
    const next = { ...this.options };
    for (const k of ['readTimeoutMs', 'frameDeadlineMs', 'bodyDeadlineMs'] as const) {
      if (k in options) {
        if (options[k] === undefined) delete next[k];
        else next[k] = options[k];
      }
    }
    this.options = next;
  }

  /** Bytes held for the frame being read (what a slow or lying peer costs). */
  get bufferedBytes(): number {
    return this.buffered + this.bodyFilled;
  }

  private cap(): number {
    return this.framesRead === 0 && this.options.firstFrameMaxBytes !== undefined
      ? this.options.firstFrameMaxBytes
      : this.maxFrameBytes;
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.failure) return;
    if (this.readTimer) this.armReadTimer();
    try {
      const rest = this.fillBody(chunk);
      if (rest.length > 0) {
        this.chunks.push(rest);
        this.buffered += rest.length;
        this.extract();
      }
      this.settleCharge();
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    this.armBodyTimer();
    this.deliver();
  };

  /** Copy what `chunk` holds of the large body being read into it; returns the rest of the chunk. */
  private fillBody(chunk: Buffer): Buffer {
    if (!this.body) return chunk;
    const k = Math.min(chunk.length, this.bodyBytes - this.bodyFilled);
    this.reserve(this.bodyFilled + k);
    chunk.copy(this.body, this.bodyFilled, 0, k);
    this.bodyFilled += k;
    if (this.bodyFilled === this.bodyBytes) this.completeBody();
    return chunk.subarray(k);
  }

  /**
   * Room for `n` bytes of the large body: its buffer doubles as bytes arrive (up to the frame's length,
   * from LARGE_BODY_MIN_BYTES), so the address space it takes follows what the peer sent, never what it claimed.
   */
  private reserve(n: number): void {
    const body = this.body!;
    if (n <= body.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.min(this.bodyBytes, Math.max(n, body.length * 2, LARGE_BODY_MIN_BYTES)));
    body.copy(grown, 0, 0, this.bodyFilled);
    this.body = grown;
  }

  private completeBody(): void {
    this.ready.push(this.body!);
    this.body = undefined;
    this.bodyFilled = 0;
    this.bodyBytes = -1;
    this.framesRead++;
  }

  /** Charge the budget for what the partial frame holds now, or give back what it no longer does. */
  private settleCharge(): void {
    const budget = this.options.budget;
    if (!budget) return;
    const held = this.bufferedBytes;
    if (held > this.charged) budget.charge(held - this.charged, this.peer);
    else if (held < this.charged) budget.release(this.charged - held);
    this.charged = held;
  }

  /** A partial frame is held: it must complete within bodyDeadlineMs of its first byte. */
  private armBodyTimer(): void {
    if (this.bufferedBytes === 0) {
      if (this.bodyTimer) clearTimeout(this.bodyTimer);
      this.bodyTimer = null;
      return;
    }
    const ms = this.options.bodyDeadlineMs;
    if (this.bodyTimer || ms === undefined) return;
    this.bodyTimer =
      setTimer(
        () =>
          this.fail(
            new FrameTimeoutError(
              `frame not complete within ${ms} ms of its first byte (${this.bufferedBytes} of ${this.bodyBytes < 0 ? 'its header' : `${this.bodyBytes} bytes`} received)`,
            ),
          ),
        ms,
      ) ?? null;
  }

  private extract(): void {
    for (;;) {
      if (this.bodyBytes < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) return;
        const header = this.take(FRAME_HEADER_BYTES);
        const n = header.readUInt32BE(0);
        const foreign = this.framesRead === 0 ? sniffForeignProtocol(header) : undefined;
        if (foreign) throw new WrongProtocolError(foreign);
        const cap = this.cap();
        if (n > cap) throw new FrameTooLargeError(n, cap);
        if (n === 0) throw new FrameDecodeError('empty frame: no message kind');
        this.bodyBytes = n;
        if (n > CONTIGUOUS_BODY_BYTES && this.buffered < n) {
          // A buffer of its own, grown as bytes come (reserve).
          const have = this.buffered;
          this.body = Buffer.allocUnsafeSlow(Math.min(n, Math.max(have, LARGE_BODY_MIN_BYTES)));
          if (have > 0) this.take(have).copy(this.body, 0);
          this.bodyFilled = have;
          return;
        }
      }
      if (this.buffered < this.bodyBytes) return;
      this.ready.push(this.take(this.bodyBytes));
      this.bodyBytes = -1;
      this.framesRead++;
    }
  }

  /** Remove `n` buffered bytes as one Buffer (a view when they sit in one chunk). */
  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let at = 0;
      while (at < n) {
        const c = this.chunks[0]!;
        const k = Math.min(c.length, n - at);
        c.copy(out, at, 0, k);
        at += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return out;
  }

  private deliver(): void {
    if (this.waiter && this.ready.length > 0) {
      const w = this.waiter;
      this.waiter = null;
      this.clearTimers();
      w.resolve(this.ready.shift()!);
    }
    // Hold the peer back while a complete frame waits to be taken.
    if (this.ready.length > 0) this.socket.pause();
  }

  private readonly onEnd = (): void => {
    if (this.ended) return;
    this.ended = true;
    if (this.failure) return;
    if (this.bodyBytes >= 0 || this.buffered > 0) {
      this.fail(
        new FrameDecodeError(
          `connection closed inside a frame (${this.bufferedBytes} of ${this.bodyBytes < 0 ? 'a header' : this.bodyBytes + ' bytes'} received)`,
        ),
      );
      return;
    }
    if (this.waiter && this.ready.length === 0) {
      const w = this.waiter;
      this.waiter = null;
      this.clearTimers();
      w.resolve(null);
    }
  };

  private readonly onError = (err: Error): void => {
    this.fail(err);
  };

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.chunks = [];
    this.buffered = 0;
    // A large partial frame let go: freed now, not when the heap next fills.
    if (this.bodyFilled >= RECLAIM_BYTES) reclaimMemory();
    this.body = undefined;
    this.bodyFilled = 0;
    this.options.budget?.release(this.charged);
    this.charged = 0;
    this.clearTimers();
    if (this.bodyTimer) clearTimeout(this.bodyTimer);
    this.bodyTimer = null;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  }

  private armReadTimer(): void {
    const ms = this.options.readTimeoutMs;
    if (ms === undefined) return;
    if (this.readTimer) clearTimeout(this.readTimer);
    this.readTimer =
      setTimer(() => this.fail(new FrameTimeoutError(`no bytes from the peer for ${ms} ms`)), ms) ?? null;
  }

  private clearTimers(): void {
    if (this.readTimer) clearTimeout(this.readTimer);
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.readTimer = this.deadlineTimer = null;
  }

  /** The next frame's payload (kind byte first), or null when the peer closed cleanly between frames. */
  next(): Promise<Buffer | null> {
    if (this.ready.length > 0) {
      const f = this.ready.shift()!;
      if (this.ready.length === 0) this.socket.resume();
      return Promise.resolve(f);
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(null);
    if (this.waiter)
      return Promise.reject(new Error('FrameReader.next() called again before the previous call settled'));
    this.socket.resume();
    return new Promise<Buffer | null>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.armReadTimer();
      const deadline = this.options.frameDeadlineMs;
      if (deadline !== undefined) {
        this.deadlineTimer =
          setTimer(
            () =>
              this.fail(
                new FrameTimeoutError(
                  `frame not complete within ${deadline} ms (${this.bufferedBytes} bytes received)`,
                ),
              ),
            deadline,
          ) ?? null;
      }
    });
  }

  /** Stop reading: detach from the socket and fail any pending read. */
  close(): void {
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('close', this.onEnd);
    this.socket.off('error', this.onError);
    this.fail(new Error('frame reader closed'));
  }
}
