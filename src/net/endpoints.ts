/**
 * Where every listening socket and every outbound data connection of a node is made: one way to bind
 * (a failure names the flags to change) and one way to dial a peer (TLS when the cluster has it, Nagle
 * off: frames are written whole). The control plane's bounded dial is connectWithin (tls.ts).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { listenError } from '../errors.js';
import { tlsConnectOptions, type TlsClientConfig } from './tls.js';

/**
 * A server listening on host:port (0 picks a port), each connection handed to `onSocket`. A failure to
 * bind rejects with one line naming the address and `flags` (the port in use, an address not here).
 */
export async function listenOn(
  host: string,
  port: number,
  flags: { port: string; host: string },
  onSocket?: (s: Socket) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(listenError(err, host, port, flags)));
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as { port: number }).port };
}

/** A connection to a peer's data port or link: over TLS with `tls`, plain otherwise; errors arrive as 'error'. */
export function dial(host: string, port: number, tls?: TlsClientConfig): Socket {
  return tls ? tlsConnect({ host, port, ...tlsConnectOptions(host, tls) }) : connect({ host, port, noDelay: true });
}
