/** Connecting to NATS with errors that name the servers and say when a retry may help. */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConnectorError } from '../../errors.js';
import { retrying } from '../options.js';

/** Between attempts to reach a server again. */
const RECONNECT_WAIT_MS = 500;

/**
 * Connect; with `reconnectTimeoutMs`, a connection that drops later (a server restarting) is made again
 * for that long before it closes for good. A server that does not answer is an error at once (a check
 * says so); connectNatsRiding waits for it.
 */
export async function connectNats(
  o: { servers: string[]; token?: string | undefined; connectTimeoutMs: number; reconnectTimeoutMs?: number },
  who: string,
): Promise<NatsConnection> {
  try {
    return await connect({
      servers: o.servers,
      ...(o.token ? { token: o.token } : {}),
      timeout: o.connectTimeoutMs,
      maxReconnectAttempts: Math.max(1, Math.ceil((o.reconnectTimeoutMs ?? 0) / RECONNECT_WAIT_MS)),
      reconnectTimeWait: RECONNECT_WAIT_MS,
    });
  } catch (err) {
    throw new ConnectorError(`${who}: cannot connect to NATS at ${o.servers.join(',')}: ${(err as Error).message}`, {
      cause: err,
      transient: true,
    });
  }
}

/** Connect, riding out servers that do not answer yet (restarting, a short outage) for up to `reconnectTimeoutMs`. */
export function connectNatsRiding(
  o: { servers: string[]; token?: string | undefined; connectTimeoutMs: number; reconnectTimeoutMs: number },
  who: string,
  signal: AbortSignal,
): Promise<NatsConnection> {
  return retrying(() => connectNats(o, who), {
    timeoutMs: o.reconnectTimeoutMs,
    signal,
    retriable: (err) => err instanceof ConnectorError && err.transient,
  });
}
