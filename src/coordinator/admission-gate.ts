/**
 * The admission gate: every accepted connection until its first frame is in. It bounds how many are
 * being admitted (evicting the least advanced of the busiest address, or refusing as busy), bounds
 * each by a read timeout and a deadline, answers a peer that speaks another protocol in words (HTTP
 * gets an HTTP 400 naming the HTTP API), and hands a connection with a first frame to `route`.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import {
  ADMISSION_REPLY_SEND_BOUND_MS,
  FrameConnection,
  FrameTimeoutError,
  isTlsFailure,
  secureAccepted,
  tlsReason,
  writeFrame,
  WrongProtocolError,
  type FrameBudget,
  type PeerRejections,
  type TlsServerConfig,
} from '../net/index.js';
import {
  FrameDecodeError,
  FrameTooLargeError,
  LOCAL_PROTOCOL,
  makeMessage,
  MAX_FIRST_FRAME_BYTES,
  type Message,
} from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import type { AdmissionLogLimiter } from './admission.js';
import { addressKey, admissionVerdict, type PendingAdmission } from './admission.js';
import type { CoordinatorConfig } from './config.js';

export interface AdmissionGateDeps {
  clock: Clock;
  log: Logger;
  metrics: ClinkMetrics;
  /** The coordinator's admission log, rate-limited. */
  admissionLog: AdmissionLogLimiter;
  stopping: () => boolean;
  /** A connection's first frame is in (null: it closed cleanly first). */
  route: (conn: FrameConnection, first: Message | null, admissionId: number) => Promise<void>;
  /** The control port's TLS: each accepted socket is wrapped, its handshake bounded by the admission deadline. */
  tls?: TlsServerConfig;
  /** The node's log and count of connections closed for what their peer did. */
  rejections: PeerRejections;
  /** What every connection's partial frames may hold together (--max-inflight-frame-bytes). */
  budget: FrameBudget;
}

export class AdmissionGate {
  private readonly admitting = new Map<FrameConnection, PendingAdmission>();
  private admissionSeq = 0;

  constructor(
    private readonly config: CoordinatorConfig,
    private readonly deps: AdmissionGateDeps,
  ) {
    deps.metrics.gauge(
      'clink_coordinator_admissions_pending',
      'Connections accepted whose first frame is not yet in',
      () => this.admitting.size,
    );
    deps.metrics.gauge(
      'clink_coordinator_admissions_pending_begun',
      'Connections being admitted whose first frame has begun (never evicted at the cap)',
      () => {
        let n = 0;
        for (const p of this.admitting.values()) n += p.stage;
        return n;
      },
    );
  }

  private get admissionLog(): AdmissionLogLimiter {
    return this.deps.admissionLog;
  }

  admit(socket: Socket): void {
    if (this.deps.stopping()) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const address = addressKey(socket.remoteAddress);
    const verdict = admissionVerdict([...this.admitting.values()], address, this.config.maxPendingConnections);
    if (verdict.kind === 'refuse') {
      this.refuseBusy(socket, peer, verdict.reason);
      return;
    }
    if (verdict.kind === 'evict') {
      const victim = [...this.admitting].find(([, p]) => p === verdict.victim)?.[0];
      this.deps.metrics.admissionsEvicted.inc();
      this.admissionLog.warn(
        `connection ${victim?.peer ?? '?'} evicted from admission: it had sent nothing, and ${peer} came while ${this.admitting.size} connections were being admitted`,
      );
      if (victim) {
        this.admitting.delete(victim);
        victim.close();
      }
    }
    const admissionId = ++this.admissionSeq;
    const conn = new FrameConnection(this.deps.tls ? secureAccepted(socket, this.deps.tls) : socket, {
      role: 'coordinator',
      log: this.deps.log,
      metrics: this.deps.metrics,
      firstFrameMaxBytes: MAX_FIRST_FRAME_BYTES,
      // A worker's frames read before its connection ended are handled (a session's dispatch checks it is current).
      dispatchAfterClose: true,
      readTimeoutMs: this.config.heartbeatTimeoutMs,
      frameDeadlineMs: this.config.handshakeTimeoutMs + this.config.heartbeatTimeoutMs,
      rejections: this.deps.rejections,
      budget: this.deps.budget,
    });
    const pending: PendingAdmission = { id: admissionId, address, stage: 0, acceptedAt: this.deps.clock.now() };
    socket.once('data', () => (pending.stage = 1));
    this.admitting.set(conn, pending);
    conn
      .readOne()
      .then(
        (first) => {
          this.admitting.delete(conn);
          // Sessions may be idle between frames, but a frame begun must end in time.
          conn.reader.configure({
            readTimeoutMs: undefined,
            frameDeadlineMs: undefined,
            bodyDeadlineMs: this.config.frameBodyTimeoutMs,
          });
          return this.deps.route(conn, first, admissionId);
        },
        (err: unknown) => {
          this.admitting.delete(conn);
          this.refuseAdmission(conn, err as Error);
        },
      )
      .catch((err: unknown) => {
        this.deps.log.error({ err, peer: conn.peer }, `admission of ${conn.peer} failed: ${(err as Error).message}`);
        conn.close();
      });
  }

  /**
   * Refuse a connection at the admission cap with a frame both kinds of peer read as a refusal (a
   * worker retries a retryable RegisterAck; a client prints its message), then close it.
   */
  private refuseBusy(socket: Socket, peer: string, reason: string): void {
    this.deps.metrics.handshakeFailures.inc();
    this.admissionLog.warn(`connection ${peer} refused: ${reason}`);
    const message = `coordinator busy: ${reason}; retry`;
    socket.on('error', () => undefined);
    writeFrame(
      socket,
      makeMessage('RegisterAck', {
        ok: false,
        message,
        protocolVersion: LOCAL_PROTOCOL.version,
        minCompatibleProtocolVersion: LOCAL_PROTOCOL.minCompatible,
        retryable: true,
        session: 0,
        epoch: this.config.epoch,
      }),
    ).then(
      () => socket.end(),
      () => socket.destroy(),
    );
  }

  /** Where the HTTP API listens, once it does: named to a peer that speaks HTTP to the control port. */
  httpUrl: string | undefined;

  private refuseAdmission(conn: FrameConnection, err: Error): void {
    if (err instanceof WrongProtocolError) {
      this.deps.metrics.handshakeFailures.inc();
      const http = this.httpUrl
        ? `the HTTP API is at ${this.httpUrl}`
        : 'this coordinator serves no HTTP API (clink node --http-port)';
      if (err.protocol === 'http-request') {
        const body = `this is clink's control port, which speaks its binary protocol, not HTTP; ${http}\n`;
        this.deps.rejections.record(
          conn.peer,
          'wrong_protocol',
          `it sent an HTTP request to the control port; ${http}`,
        );
        // Answered in its own protocol, so curl or a browser shows the user the mistake; closed once sent.
        const cancel = this.deps.clock.after(ADMISSION_REPLY_SEND_BOUND_MS, () => conn.close());
        conn.socket.end(
          `HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
          () => {
            cancel();
            conn.close();
          },
        );
        return;
      }
      this.deps.rejections.record(
        conn.peer,
        'wrong_protocol',
        `it ${err.protocol === 'tls' ? 'began a TLS handshake; the control port does not speak TLS' : 'spoke HTTP'}`,
      );
      conn.close();
      return;
    }
    const { rejections } = this.deps;
    if (this.deps.tls && isTlsFailure(err)) {
      this.deps.metrics.handshakeFailures.inc();
      rejections.record(
        conn.peer,
        'tls',
        `its TLS handshake failed (${tlsReason(err)}): a plain clink peer (give it --tls-ca), or under mTLS a peer without a certificate --tls-client-ca signed`,
      );
    } else if (err instanceof FrameTooLargeError) {
      this.deps.metrics.malformedFrames.inc({ role: 'coordinator' });
      rejections.record(conn.peer, 'too_large', `its first frame: ${err.message}`);
    } else if (err instanceof FrameDecodeError) {
      this.deps.metrics.malformedFrames.inc({ role: 'coordinator' });
      rejections.record(conn.peer, 'malformed', `its first frame: ${err.message}`);
    } else if (err instanceof FrameTimeoutError) {
      this.deps.metrics.handshakeFailures.inc();
      rejections.record(conn.peer, 'timeout', `no complete first frame (${err.message})`);
    }
    conn.close();
  }

  /** Close every connection still being admitted (at stop). */
  closeAll(): void {
    for (const c of this.admitting.keys()) c.close();
  }
}
