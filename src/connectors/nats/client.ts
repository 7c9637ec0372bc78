/** Connecting to NATS with errors that name the servers and say when a retry may help. */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConnectorError } from '../../errors.js';

export async function connectNats(o: { servers: string[]; token?: string; connectTimeoutMs: number }, who: string): Promise<NatsConnection> {
  try {
    return await connect({ servers: o.servers, token: o.token, timeout: o.connectTimeoutMs, maxReconnectAttempts: 10, reconnectTimeWait: 500 });
  } catch (err) {
    throw new ConnectorError(`${who}: cannot connect to NATS at ${o.servers.join(',')}: ${(err as Error).message}`, { cause: err, transient: true });
  }
}
