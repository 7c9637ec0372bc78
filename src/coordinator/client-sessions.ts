/**
 * Client sessions, bounded: at most `maxSessions` at once (a HelloClient past it is refused with a
 * one-line reason), each closed after `idleTimeoutMs` without a request unless a job it submitted is
 * still running (it waits for that job's JobCompleted), and each reply written with backpressure: a
 * client whose unread replies exceed `maxOutboundBytes` is dropped, never buffered without bound.
 * Requests of one session are handled one at a time (FIFO), and a request whose reply cannot be
 * written waits for the socket to drain before the next is handled, so a client that floods requests
 * and reads nothing piles up at most CLIENT_DISPATCH_BACKLOG_FRAMES requests and is then dropped
 * (counted as slow_reader).
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { FrameConnection } from '../net/index.js';
import { encodeFrame, type Message } from '../protocol/index.js';

/** Requests a client may have queued for handling; more cost it the connection. */
export const CLIENT_DISPATCH_BACKLOG_FRAMES = 64;

export interface ClientSession {
  conn: FrameConnection;
  name: string;
  lastActivityAt: number;
}

export interface ClientSessionLimits {
  maxSessions: number;
  idleTimeoutMs: number;
  maxOutboundBytes: number;
}

export class ClientSessions {
  private readonly sessions = new Set<ClientSession>();

  constructor(
    private readonly limits: ClientSessionLimits,
    private readonly log: Logger,
    private readonly metrics: ClinkMetrics,
    /** The clock idle sessions are judged by (the coordinator's). */
    private readonly now: () => number = Date.now,
  ) {
    metrics.gauge('clink_coordinator_client_sessions', 'Client sessions open', () => this.sessions.size);
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Open a session, or say why not (the cap). */
  open(conn: FrameConnection, name: string, onClosed: (c: ClientSession) => void): ClientSession | string {
    if (this.sessions.size >= this.limits.maxSessions) {
      this.metrics.clientSessionsRefused.inc();
      return `coordinator busy: ${this.sessions.size} client sessions are open (--max-client-sessions ${this.limits.maxSessions}); retry`;
    }
    const c: ClientSession = { conn, name, lastActivityAt: this.now() };
    this.sessions.add(c);
    void conn.closed.then((closed) => {
      this.sessions.delete(c);
      // Its requests piled up while their replies waited for it to read: a slow reader.
      if (closed.reason === 'backlog') this.metrics.clientSessionsDropped.inc({ reason: 'slow_reader' });
      onClosed(c);
    });
    return c;
  }

  /** A request came in: the session is not idle. */
  touch(c: ClientSession): void {
    c.lastActivityAt = this.now();
  }

  /**
   * Write a reply. Returns false (and drops the client) when its unread replies would exceed the bound;
   * otherwise resolves once the socket can take more, so the session's next request waits for a reader.
   */
  async send(c: ClientSession, m: Message): Promise<boolean> {
    const socket = c.conn.socket;
    if (socket.destroyed) return false;
    const frame = encodeFrame(m);
    if (socket.writableLength > 0 && socket.writableLength + frame.length > this.limits.maxOutboundBytes) {
      this.drop(
        c,
        'slow_reader',
        `${socket.writableLength} bytes of replies unread (bound ${this.limits.maxOutboundBytes})`,
      );
      return false;
    }
    if (socket.write(frame)) return true;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      };
      socket.once('drain', done);
      socket.once('close', done);
    });
    return !socket.destroyed;
  }

  /** Close sessions idle past the timeout; `waiting(c)` says whether one waits for a job it submitted. */
  sweep(now: number, waiting: (c: ClientSession) => boolean): void {
    for (const c of this.sessions) {
      if (now - c.lastActivityAt > this.limits.idleTimeoutMs && !waiting(c))
        this.drop(c, 'idle', `no request for ${now - c.lastActivityAt} ms`);
    }
  }

  private drop(c: ClientSession, reason: 'idle' | 'slow_reader', detail: string): void {
    this.metrics.clientSessionsDropped.inc({ reason });
    this.log.warn(
      { client: c.name, peer: c.conn.peer, reason },
      `client ${c.name} (${c.conn.peer}) dropped: ${detail}`,
    );
    c.conn.close();
  }

  closeAll(): void {
    for (const c of this.sessions) c.conn.close();
  }
}
