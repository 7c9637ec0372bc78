/**
 * Outbox: everything a coordinator sends one worker session after its RegisterAck. `post()` queues an
 * encoded frame and returns at once; it never waits on the peer. One writer loop writes the queue in
 * chunks of up to 64 KiB, one at a time, and counts progress only when the OS has taken a chunk, so a
 * peer that stops reading shows as no progress (the watchdog's stall verdict) while one that reads a
 * large Deploy slowly but steadily does not.
 *
 * Control frames are bounded by count and bytes, Deploys (bulk) apart by bytes. A post past a bound
 * stops the outbox (reason `overflow`): queued frames are discarded and counted, and the socket is
 * destroyed both ways.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics, OutboundClass, OutboxStopReason } from '../metrics/index.js';
import { FRAME_CHUNK_BYTES } from '../protocol/index.js';
import { COORDINATOR_DEFAULTS } from '../config/index.js';
import { setTimer } from '../util/index.js';

export interface OutboxLimits {
  /** @default 10,000 */
  maxControlFrames: number;
  /** @default 64 MiB */
  maxControlBytes: number;
  /** @default 1 GiB */
  maxBulkBytes: number;
}

export const DEFAULT_OUTBOX_LIMITS: Readonly<OutboxLimits> = Object.freeze({
  maxControlFrames: COORDINATOR_DEFAULTS.maxOutboundControlFrames,
  maxControlBytes: COORDINATOR_DEFAULTS.maxOutboundControlBytes,
  maxBulkBytes: COORDINATOR_DEFAULTS.maxOutboundBulkBytes,
});

export type PostResult = 'queued' | 'refused';
export type OutboxState = 'open' | 'flushing' | 'stopped';

export interface OutboxStop {
  reason: OutboxStopReason;
  detail: string;
  /** True when the outbox stopped by itself (overflow, allocation): the watchdog's overflow verdict. */
  byItself: boolean;
}

/** The part of a socket the outbox uses; a real net.Socket or tls.TLSSocket in production. */
export type OutboxSocket = Pick<Socket, 'write' | 'destroy' | 'on' | 'once' | 'off' | 'destroyed'>;

interface Queued {
  frame: Buffer;
  cls: OutboundClass;
}

export interface OutboxOptions {
  limits?: Partial<OutboxLimits>;
  metrics?: ClinkMetrics;
  log?: Logger;
  /** Who this outbox writes to, for log lines. */
  peer?: string;
  now?: () => number;
  /** Called once when the outbox stops, for whatever reason. */
  onStop?: (stop: OutboxStop) => void;
}

export class Outbox {
  readonly limits: OutboxLimits;
  private readonly queue: Queued[] = [];
  private head = 0;
  private controlFrames = 0;
  private controlBytes = 0;
  private bulkBytes = 0;
  private writing: Queued | null = null;
  private state_: OutboxState = 'open';
  private stop_: OutboxStop | undefined;
  private pendingSince: number | null = null;
  private lastProgress: number;
  private wake: (() => void) | null = null;
  private idle: (() => void) | null = null;
  private readonly now: () => number;
  /** Settles when the writer loop has ended. */
  readonly writerDone: Promise<void>;

  constructor(
    private readonly socket: OutboxSocket,
    private readonly options: OutboxOptions = {},
  ) {
    this.limits = { ...DEFAULT_OUTBOX_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    this.lastProgress = this.now();
    // A transport that goes away under the outbox stops it; the session's loss is the watchdog's call.
    socket.once('close', () => this.stop('write_failed', 'the connection closed', false));
    socket.on('error', (err) => this.stop('write_failed', `the connection failed: ${err.message}`, false));
    this.writerDone = this.writeLoop();
  }

  get state(): OutboxState {
    return this.state_;
  }

  /** A method, not a field read, because the state changes across awaits. */
  private isStopped(): boolean {
    return this.state_ === 'stopped';
  }

  /** Why it stopped, once it has. */
  get stopped(): OutboxStop | undefined {
    return this.stop_;
  }

  /** Frames queued (not counting the one being written). */
  get queuedFrames(): number {
    return this.queue.length - this.head;
  }

  get queuedBytes(): { control: number; bulk: number } {
    return { control: this.controlBytes, bulk: this.bulkBytes };
  }

  /**
   * Queue a frame. Never waits. Refused once the outbox is stopped or flushing; a frame that would
   * take its class past a bound stops the outbox (overflow) and is refused.
   */
  post(frame: Buffer, cls: OutboundClass = 'control'): PostResult {
    if (this.state_ !== 'open') return 'refused';
    if (cls === 'control') {
      if (this.controlFrames + 1 > this.limits.maxControlFrames) {
        this.stop(
          'overflow',
          `control queue at its bound of ${this.limits.maxControlFrames} frames (max_outbound_control_frames)`,
          true,
        );
        return 'refused';
      }
      if (this.controlBytes + frame.length > this.limits.maxControlBytes) {
        this.stop(
          'overflow',
          `control queue at its bound of ${this.limits.maxControlBytes} bytes (max_outbound_control_bytes)`,
          true,
        );
        return 'refused';
      }
      this.controlFrames++;
      this.controlBytes += frame.length;
    } else {
      if (this.bulkBytes + frame.length > this.limits.maxBulkBytes) {
        this.stop(
          'overflow',
          `bulk queue at its bound of ${this.limits.maxBulkBytes} bytes (max_outbound_bulk_bytes)`,
          true,
        );
        return 'refused';
      }
      this.bulkBytes += frame.length;
    }
    if (this.pendingSince === null) this.pendingSince = this.now();
    this.queue.push({ frame, cls });
    const w = this.wake;
    this.wake = null;
    w?.();
    return 'queued';
  }

  /** Encode and post; an encoding that cannot allocate stops the outbox (reason `allocation`). */
  postEncoded(encode: () => Buffer, cls: OutboundClass = 'control'): PostResult {
    if (this.state_ !== 'open') return 'refused';
    let frame: Buffer;
    try {
      frame = encode();
    } catch (err) {
      if (err instanceof RangeError) {
        this.stop('allocation', `could not allocate a frame: ${err.message}`, true);
        return 'refused';
      }
      throw err;
    }
    return this.post(frame, cls);
  }

  /** Milliseconds frames have been pending, or null when nothing is queued or being written. */
  pendingSinceMs(now = this.now()): number | null {
    return this.pendingSince === null ? null : now - this.pendingSince;
  }

  /** When the socket last took a chunk. */
  lastProgressAt(): number {
    return this.lastProgress;
  }

  /** How long frames have been pending with none of them making progress (0 when none pend). */
  stalledForMs(now = this.now()): number {
    if (this.pendingSince === null) return 0;
    return now - Math.max(this.pendingSince, this.lastProgress);
  }

  /** Restart the stall clock (after a watchdog sweep that was itself late judged nothing). */
  restartStallClock(): void {
    this.lastProgress = this.now();
  }

  private nextFrame(): Queued | undefined {
    if (this.head >= this.queue.length) return undefined;
    const q = this.queue[this.head]!;
    this.queue[this.head++] = undefined as unknown as Queued;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    if (q.cls === 'control') {
      this.controlFrames--;
      this.controlBytes -= q.frame.length;
    } else this.bulkBytes -= q.frame.length;
    return q;
  }

  private async writeLoop(): Promise<void> {
    while (!this.isStopped()) {
      const q = this.nextFrame();
      if (!q) {
        this.pendingSince = null;
        const idle = this.idle;
        this.idle = null;
        idle?.();
        if (this.state_ === 'flushing') return;
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      this.writing = q;
      for (let at = 0; at < q.frame.length && !this.isStopped(); at += FRAME_CHUNK_BYTES) {
        const chunk = q.frame.subarray(at, Math.min(q.frame.length, at + FRAME_CHUNK_BYTES));
        const ok = await this.writeChunk(chunk);
        if (!ok) return;
        this.lastProgress = this.now();
      }
      this.writing = null;
    }
  }

  /** Write one chunk and wait until the OS has taken it. False when the write failed or we stopped. */
  private writeChunk(chunk: Buffer): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const onClose = (): void => {
        this.stop('write_failed', 'the connection closed during a write', false);
        resolve(false);
      };
      this.socket.once('close', onClose);
      try {
        this.socket.write(chunk, (err) => {
          this.socket.off('close', onClose);
          if (err) {
            this.stop('write_failed', `write to the peer failed: ${err.message}`, false);
            resolve(false);
          } else resolve(!this.isStopped());
        });
      } catch (err) {
        this.socket.off('close', onClose);
        this.stop('write_failed', `write to the peer failed: ${(err as Error).message}`, false);
        resolve(false);
      }
    });
  }

  /**
   * Write what is queued, refusing new posts, until `deadlineMs` from now. What is left then is
   * discarded and counted (reason `flush_deadline`). Either way the outbox ends stopped.
   */
  async flush(deadlineMs: number): Promise<void> {
    if (this.state_ === 'stopped') return;
    this.state_ = 'flushing';
    const drained = new Promise<void>((r) => {
      if (this.queuedFrames === 0 && this.writing === null) r();
      else this.idle = r;
    });
    const w = this.wake;
    this.wake = null;
    w?.();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      drained.then(() => false),
      new Promise<boolean>((r) => (timer = setTimer(() => r(true), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) this.stop('flush_deadline', `flush did not finish within ${deadlineMs} ms`, false);
    else this.stop('aborted', 'flushed and closed', false, false);
    await this.writerDone;
  }

  /** Stop now: discard what is queued and close the socket. Never a watchdog verdict. */
  abort(detail = 'aborted by the coordinator'): void {
    this.stop('aborted', detail, false);
  }

  private stop(reason: OutboxStopReason, detail: string, byItself: boolean, log = true): void {
    if (this.state_ === 'stopped') return;
    this.state_ = 'stopped';
    this.stop_ = { reason, detail, byItself };
    const discarded = { control: 0, bulk: 0 };
    if (this.writing) discarded[this.writing.cls]++;
    for (let q = this.nextFrame(); q; q = this.nextFrame()) discarded[q.cls]++;
    this.pendingSince = null;
    for (const cls of ['control', 'bulk'] as const) {
      if (discarded[cls] > 0) this.options.metrics?.outboundFramesDiscarded.inc({ class: cls, reason }, discarded[cls]);
    }
    if (log) {
      // A stop by itself (overflow, allocation) costs the worker its session; a closed transport is
      // routine (a worker leaving) and its loss, if any, is the watchdog's call.
      const level = byItself ? 'warn' : 'info';
      this.options.log?.[level](
        { component: 'coordinator.outbox', peer: this.options.peer, reason, discarded },
        `outbound queue stopped (${reason}): ${detail}`,
      );
    }
    if (!this.socket.destroyed) this.socket.destroy();
    const w = this.wake;
    this.wake = null;
    w?.();
    const idle = this.idle;
    this.idle = null;
    idle?.();
    this.options.onStop?.(this.stop_);
  }
}
