/**
 * What a peer that does not speak clink's framing sent instead, read from the first four bytes: an
 * HTTP request (a browser or curl at the control port), an HTTP response (a clink peer pointed at an
 * HTTP port, such as the coordinator's --http-port) or a TLS record (TLS on a plain port). Read as a
 * frame length, each is a claim of about a gigabyte; named, it is a mistake the user can fix.
 */
import { DEFAULT_CONTROL_PORT } from '../config/index.js';
import { ClinkError } from '../errors.js';

export type ForeignProtocol = 'http-request' | 'http-response' | 'tls';

const HTTP_REQUEST_STARTS = ['GET ', 'POST', 'PUT ', 'HEAD', 'DELE', 'OPTI', 'PATC', 'CONN', 'TRAC', 'PRI '];

export function sniffForeignProtocol(header: Buffer): ForeignProtocol | undefined {
  if (header.length < 4) return undefined;
  // A TLS record: content type 20-23 (handshake 22, alert 21), then major version 3.
  if (header[0]! >= 0x14 && header[0]! <= 0x17 && header[1] === 0x03) return 'tls';
  const start = header.toString('latin1', 0, 4);
  if (start === 'HTTP') return 'http-response';
  if (HTTP_REQUEST_STARTS.includes(start)) return 'http-request';
  return undefined;
}

const SPOKE: Record<ForeignProtocol, string> = {
  'http-request': 'sent an HTTP request',
  'http-response': 'answered with HTTP',
  tls: 'began a TLS handshake',
};

export class WrongProtocolError extends ClinkError {
  constructor(
    readonly protocol: ForeignProtocol,
    message = `the peer ${SPOKE[protocol]}, not clink's binary protocol`,
  ) {
    super('CLINK_ERR_WRONG_PROTOCOL', message);
  }
}

/** The message for a client or worker whose `host:port` answered in another protocol. */
export function wrongPortMessage(host: string, port: number, protocol: ForeignProtocol, flag: string): string {
  if (protocol === 'http-response' || protocol === 'http-request')
    return `${host}:${port} is an HTTP port (perhaps the coordinator's --http-port), not its control port; point ${flag} at the control port (clink node --port, default ${DEFAULT_CONTROL_PORT})`;
  return `${host}:${port} speaks TLS; this clink does not: point ${flag} at a plain clink control port (default ${DEFAULT_CONTROL_PORT})`;
}
