/**
 * Before a job deploys: the servers answer (with the token, if any), the source's stream is there, and
 * a stream captures the sink's subject. A refusal names the servers and the option to fix.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { ConnectorError } from '../../errors.js';
import type { ConnectorCheckContext } from '../../sdk/index.js';
import { connectNats } from './client.js';

export async function checkNats(
  side: 'source' | 'sink',
  o: { servers: string[]; token?: string | undefined; stream?: string; subject?: string | undefined },
  ctx: ConnectorCheckContext,
): Promise<void> {
  const who = `nats ${side}`;
  const servers = o.servers.join(',');
  let nc;
  try {
    nc = await connectNats(
      { servers: o.servers, ...(o.token ? { token: o.token } : {}), connectTimeoutMs: ctx.timeoutMs },
      who,
    );
  } catch (err) {
    throw new ConnectorError(
      `${(err as Error).message}; check the option servers (and token) and that the server runs`,
      { cause: err },
    );
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: ctx.timeoutMs });
    if (side === 'source') {
      await jsm.streams.info(o.stream!).catch((err: unknown) => {
        throw new ConnectorError(
          `${who}: stream '${o.stream}' not found at ${servers} (${(err as Error).message}); create it first, or correct the option stream`,
          { cause: err },
        );
      });
    } else {
      await jsm.streams.find(o.subject!).catch((err: unknown) => {
        throw new ConnectorError(
          `${who}: no stream at ${servers} captures subject '${o.subject}' (${(err as Error).message}); create one that does, or correct the option subject`,
          { cause: err },
        );
      });
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
}
