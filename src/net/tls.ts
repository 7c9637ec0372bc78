/**
 * TLS for the control plane and the data plane (node:tls, TLS 1.3 only: no renegotiation exists to
 * refuse). A server wraps each accepted socket itself, so the handshake is part of its admission and
 * bounded by the same deadline; a client connects (TCP, then TLS) within one deadline and a timeout
 * names the stage it ran out in. A server certificate must name the host it was reached by: a DNS name
 * among its DNS names, an IP address among its IP addresses (never its CN), and a mismatch says what
 * the certificate names. A plain peer on a TLS port, or a TLS peer on a plain port, is told so.
 */
import { readFile } from 'node:fs/promises';
import { isIP, connect as netConnect, type Socket } from 'node:net';
import {
  checkServerIdentity,
  connect as tlsConnect,
  createSecureContext,
  TLSSocket,
  type ConnectionOptions,
  type PeerCertificate,
  type SecureContext,
} from 'node:tls';
import { ClinkError, EnvironmentError } from '../errors.js';
import { setTimer } from '../util/index.js';

/**
 * A server's TLS: its certificate and key (PEM), and with `clientCa` the CA client certificates must
 * chain to (mTLS). Plain buffers, so a job thread can be handed them.
 */
export interface TlsServerConfig {
  cert: Buffer;
  key: Buffer;
  clientCa?: Buffer;
}

/** A client's TLS: the CA to verify servers against, its own certificate under mTLS, and whether host names are checked. */
export interface TlsClientConfig {
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
  verifyHostname: boolean;
}

async function pem(path: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new EnvironmentError(`cannot read ${path} (${flag}): ${(err as Error).message}`, { cause: err });
  }
}

/** Read PEM files together; of several that fail, the first in flag order is named, not the first to fail. */
async function pems<T extends readonly unknown[]>(reads: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(reads);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** Load a server's TLS from PEM files; a file that is not what its flag says is named. */
export async function loadTlsServer(files: { cert: string; key: string; clientCa?: string }): Promise<TlsServerConfig> {
  const [cert, key, clientCa] = await pems<[Buffer, Buffer, Buffer | undefined]>([
    pem(files.cert, '--tls-cert'),
    pem(files.key, '--tls-key'),
    files.clientCa ? pem(files.clientCa, '--tls-client-ca') : Promise.resolve(undefined),
  ]);
  const tls: TlsServerConfig = { cert, key, ...(clientCa ? { clientCa } : {}) };
  try {
    contextOf(tls);
    return tls;
  } catch (err) {
    throw new EnvironmentError(
      `cannot use --tls-cert ${files.cert} with --tls-key ${files.key}${files.clientCa ? ` and --tls-client-ca ${files.clientCa}` : ''}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Load a client's TLS from PEM files. */
export async function loadTlsClient(files: {
  ca: string;
  clientCert?: string;
  clientKey?: string;
  verifyHostname?: boolean;
}): Promise<TlsClientConfig> {
  const [ca, cert, key] = await pems<[Buffer, Buffer | undefined, Buffer | undefined]>([
    pem(files.ca, '--tls-ca'),
    files.clientCert ? pem(files.clientCert, '--tls-client-cert') : Promise.resolve(undefined),
    files.clientKey ? pem(files.clientKey, '--tls-client-key') : Promise.resolve(undefined),
  ]);
  return { ca, ...(cert ? { cert } : {}), ...(key ? { key } : {}), verifyHostname: files.verifyHostname !== false };
}

/** What a certificate names, for a mismatch message: `DNS:a, IP:1.2.3.4` (or its CN when it has no SANs). */
export function certificateNames(cert: PeerCertificate): string {
  return cert.subjectaltname || (cert.subject?.CN ? `CN=${String(cert.subject.CN)}` : 'nothing');
}

/**
 * Check that `cert` names `host`: a DNS name against its DNS entries, an IP literal against its IP
 * entries only. Returns the error to refuse with, or undefined.
 */
export function hostnameMismatch(host: string, cert: PeerCertificate): Error | undefined {
  const names = certificateNames(cert);
  // Node matches an IP literal against IP SANs only, and a name against DNS SANs (then CN without SANs).
  if (isIP(host) && !/IP Address:/.test(cert.subjectaltname ?? '')) {
    return new ClinkError(
      'CLINK_ERR_CONNECTOR',
      `the server's certificate does not match the host ${host} (it names ${names}); issue it with IP:${host} among its names, or pass --tls-no-verify-hostname`,
    );
  }
  const err = checkServerIdentity(host, cert);
  if (!err) return undefined;
  return new ClinkError(
    'CLINK_ERR_CONNECTOR',
    `the server's certificate does not match the host ${host} (it names ${names}); issue it with ${isIP(host) ? 'IP' : 'DNS'}:${host} among its names, or pass --tls-no-verify-hostname`,
  );
}

/** How a client side connects to `host` over TLS: TLS 1.3, this CA, its certificate under mTLS, and the host check. */
export function tlsConnectOptions(host: string, tls: TlsClientConfig): ConnectionOptions {
  return {
    ca: tls.ca,
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    minVersion: 'TLSv1.3',
    // SNI takes names only; an IP literal is checked against the certificate's IP addresses.
    ...(isIP(host) ? {} : { servername: host }),
    checkServerIdentity: (_name, cert) => (tls.verifyHostname ? hostnameMismatch(host, cert) : undefined),
  };
}

/**
 * Connect to `what` at host:port, over TLS when `tls` is given, within `timeoutMs` for TCP connect and
 * handshake together. A timeout names the stage; a server that does not speak TLS, or a certificate
 * that does not verify, is named as such.
 */
export function connectWithin(
  host: string,
  port: number,
  what: string,
  timeoutMs: number,
  tls?: TlsClientConfig,
  refusedHint = '; is one running there?',
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    let stage = 'TCP connect';
    const socket = netConnect({ host, port, noDelay: true });
    let secured: TLSSocket | undefined;
    let settled = false;
    // The first outcome wins: destroying the sockets below emits their own close and error events.
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
      socket.destroy();
      secured?.destroy();
    };
    const timer = setTimer(
      () =>
        fail(
          new ClinkError(
            'CLINK_ERR_FRAME_TIMEOUT',
            `could not connect to ${what} at ${host}:${port}: no ${stage === 'TCP connect' ? 'TCP connection' : 'TLS handshake'} within ${timeoutMs} ms (--handshake-timeout-ms)`,
          ),
        ),
      timeoutMs,
    );
    socket.once('error', (err) => {
      if (stage !== 'TCP connect') return;
      const refused = (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? refusedHint : '';
      fail(
        new ClinkError(
          'CLINK_ERR_CONNECTOR',
          `could not connect to ${what} at ${host}:${port}: ${err.message}${refused}`,
          { cause: err },
        ),
      );
    });
    socket.once('connect', () => {
      if (!tls) {
        settled = true;
        clearTimeout(timer);
        resolve(socket);
        return;
      }
      stage = 'TLS handshake';
      const s = (secured = tlsConnect({ socket, ...tlsConnectOptions(host, tls) }));
      s.once('secureConnect', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        s.setNoDelay(true);
        resolve(s);
      });
      s.once('error', (err) => fail(describeHandshakeFailure(err, what, host, port)));
      // A peer may close without an alert: a plain port that dropped the ClientHello.
      s.once('close', () =>
        fail(
          describeHandshakeFailure(
            Object.assign(new Error('socket disconnected before secure TLS connection was established'), {
              code: 'ECONNRESET',
            }),
            what,
            host,
            port,
          ),
        ),
      );
    });
  });
}

/** A client's handshake failed: say what that most likely means. */
function describeHandshakeFailure(err: Error, what: string, host: string, port: number): Error {
  if (err instanceof ClinkError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? '';
  const msg = err.message;
  if (
    code === 'ECONNRESET' ||
    /socket disconnected before secure TLS connection|wrong version number|packet length too long/i.test(msg)
  ) {
    return new ClinkError(
      'CLINK_ERR_WRONG_PROTOCOL',
      `${what} at ${host}:${port} does not speak TLS (a plain clink port?): drop --tls-ca, or point at a port started with --tls-cert`,
      { cause: err },
    );
  }
  if (/certificate required|alert number 116/i.test(msg)) {
    return new ClinkError(
      'CLINK_ERR_CONNECTOR',
      `${what} at ${host}:${port} requires a client certificate: give --tls-client-cert and --tls-client-key`,
      { cause: err },
    );
  }
  if (
    /self.signed|unable to get local issuer|unable to verify|certificate has expired|UNABLE_TO|DEPTH_ZERO/i.test(
      msg + code,
    )
  ) {
    return new ClinkError(
      'CLINK_ERR_CONNECTOR',
      `the certificate of ${what} at ${host}:${port} does not verify against --tls-ca: ${msg}`,
      { cause: err },
    );
  }
  return new ClinkError('CLINK_ERR_CONNECTOR', `TLS handshake with ${what} at ${host}:${port} failed: ${msg}`, {
    cause: err,
  });
}

/**
 * Wrap an accepted socket in TLS (the server side). The handshake runs as the peer's first bytes
 * arrive; whoever reads the connection bounds it (the admission deadline). Under mTLS a peer without a
 * certificate the client CA signed is cut off in the handshake.
 */
export function secureAccepted(socket: Socket, tls: TlsServerConfig): TLSSocket {
  const mutual = tls.clientCa !== undefined;
  const secured = new TLSSocket(socket, {
    isServer: true,
    secureContext: contextOf(tls),
    requestCert: mutual,
    rejectUnauthorized: mutual,
  });
  // A TLSSocket made by hand (not by tls.Server) does not act on rejectUnauthorized: OpenSSL verifies
  // the client's chain, but the verdict is read here, as tls.Server reads it (verifyError). Where that is
  // not available, the connection is refused: never an unverified client.
  if (mutual) {
    secured.once('secure', () => {
      const handle = (secured as unknown as { _handle?: { verifyError?: () => Error | null } })._handle;
      const verdict =
        typeof handle?.verifyError === 'function'
          ? handle.verifyError()
          : new Error('the client certificate could not be verified');
      if (verdict) {
        secured.destroy(
          Object.assign(new Error(`client certificate refused: ${verdict.message}`), {
            code: 'ERR_TLS_CLIENT_CERT_REFUSED',
          }),
        );
        return;
      }
      (secured as { authorized: boolean }).authorized = true;
    });
  }
  return secured;
}

/** The reason an OpenSSL error gives, without its file and line noise (`wrong version number`). */
export function tlsReason(err: Error): string {
  return /SSL routines:[^:]*:([^:]+):/.exec(err.message)?.[1] ?? err.message.trim();
}

const contexts = new WeakMap<TlsServerConfig, SecureContext>();

/** The secure context of a server's TLS, made once. Throws when the key does not fit the certificate. */
function contextOf(tls: TlsServerConfig): SecureContext {
  let c = contexts.get(tls);
  if (!c)
    contexts.set(
      tls,
      (c = createSecureContext({
        cert: tls.cert,
        key: tls.key,
        ...(tls.clientCa ? { ca: tls.clientCa } : {}),
        minVersion: 'TLSv1.3',
      })),
    );
  return c;
}

/**
 * A node closed a new connection before its first reply (or failed it with a TLS alert): over TLS, a
 * client certificate its --tls-client-ca did not sign (or none); over plain TCP, most likely a TLS port.
 */
export function noAnswerError(what: string, host: string, port: number, overTls: boolean, err?: Error): ClinkError {
  if (overTls && (!err || isTlsFailure(err))) {
    return new ClinkError(
      'CLINK_ERR_CONNECTOR',
      `${what} at ${host}:${port} refused this TLS client${err ? ` (${tlsReason(err)})` : ''}: it requires a client certificate its --tls-client-ca signed; give --tls-client-cert and --tls-client-key`,
      err ? { cause: err } : undefined,
    );
  }
  // A reset before any answer means the same as a close: which of the two arrives is a race on the server's side.
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (!overTls && (!err || code === 'ECONNRESET' || code === 'EPIPE')) {
    return new ClinkError(
      'CLINK_ERR_CONNECTOR',
      `${what} at ${host}:${port} closed the connection without answering: if it serves TLS, give --tls-ca (under mTLS also --tls-client-cert and --tls-client-key)`,
      err ? { cause: err } : undefined,
    );
  }
  return new ClinkError(
    'CLINK_ERR_CONNECTOR',
    `lost the connection to ${what} at ${host}:${port}: ${err?.message ?? 'closed'}; is it running and reachable?`,
    err ? { cause: err } : undefined,
  );
}

/** Whether `err` is a TLS failure (a handshake with a peer that speaks something else, a refused certificate). */
export function isTlsFailure(err: unknown): boolean {
  const code = String((err as NodeJS.ErrnoException)?.code ?? '');
  return (
    code.startsWith('ERR_SSL') ||
    code.startsWith('ERR_TLS') ||
    /SSL routines|wrong version number|certificate/i.test((err as Error)?.message ?? '')
  );
}

/** The name a verified client certificate gives its holder (CN, else its first SAN), or '' without one. */
export function peerIdentity(socket: Socket): string {
  if (!(socket instanceof TLSSocket) || !socket.authorized) return '';
  const cert = socket.getPeerCertificate();
  return cert?.subject?.CN ? String(cert.subject.CN) : (cert?.subjectaltname?.split(',')[0]?.trim() ?? '');
}
