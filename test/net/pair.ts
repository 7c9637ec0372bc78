/** A real TCP connection over loopback: `client` is the peer, `server` the accepted socket under test. */
import { createServer, connect, type Socket } from 'node:net';

export interface SocketPair {
  client: Socket;
  server: Socket;
  close(): Promise<void>;
}

export async function socketPair(): Promise<SocketPair> {
  const listener = createServer();
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  const port = (listener.address() as { port: number }).port;
  const accepted = new Promise<Socket>((r) => listener.once('connection', r));
  const client = connect(port, '127.0.0.1');
  await new Promise<void>((r, j) => client.once('connect', r).once('error', j));
  const server = await accepted;
  return {
    client,
    server,
    async close() {
      client.destroy();
      server.destroy();
      await new Promise<void>((r) => listener.close(() => r()));
    },
  };
}
