/**
 * Fetch requests sent over connections of our own, one per broker. The library's consumer.fetch() also
 * filters aborted transactions under read_committed, and that filter throws on an abort marker whose
 * producer the response does not list (seen under load); the source does its own filtering across
 * responses (source.ts), so it only needs the request. The Fetch version is the highest both sides
 * speak, from 13 (topic ids: Kafka 3.1 and newer) to 17.
 */
import { apiVersionsV3, Connection, fetchV13, fetchV14, fetchV15, fetchV16, fetchV17 } from '@platformatic/kafka';
import { ConnectorError } from '../../errors.js';

/** Connection.close takes a callback, not a force flag (unlike the clients' close). */
function closeQuietly(c: Connection): Promise<void> {
  return c.close().catch(() => undefined);
}

export type FetchResponse = fetchV17.FetchResponse;
export type FetchRequestTopic = fetchV17.FetchRequestTopic;
type FetchApi = typeof fetchV17.api;

const FETCH_KEY = 1;
const VERSIONS: Record<number, FetchApi> = {
  13: fetchV13.api as FetchApi,
  14: fetchV14.api as FetchApi,
  15: fetchV15.api as FetchApi,
  16: fetchV16.api as FetchApi,
  17: fetchV17.api,
};

export interface FetchArgs {
  maxWaitMs: number;
  maxBytes: number;
  isolationLevel: number;
  topics: FetchRequestTopic[];
}

export class Fetcher {
  private readonly connections = new Map<string, Promise<Connection>>();
  private fetchApi: FetchApi | undefined;

  constructor(
    private readonly clientId: string,
    private readonly requestTimeoutMs: number,
  ) {}

  async fetch(broker: { host: string; port: number }, args: FetchArgs): Promise<FetchResponse> {
    const key = `${broker.host}:${broker.port}`;
    try {
      const conn = await this.connect(key, broker);
      const api = (this.fetchApi ??= await this.negotiate(conn));
      return await api.async(conn, args.maxWaitMs, 1, args.maxBytes, args.isolationLevel, 0, -1, args.topics, [], '');
    } catch (err) {
      // A dead connection is not reused: the next fetch connects again.
      const dropped = this.connections.get(key);
      this.connections.delete(key);
      void dropped?.then(closeQuietly, () => undefined);
      throw err;
    }
  }

  private connect(key: string, broker: { host: string; port: number }): Promise<Connection> {
    let c = this.connections.get(key);
    if (!c) {
      const conn = new Connection(this.clientId, {
        requestTimeout: this.requestTimeoutMs,
        connectTimeout: Math.min(this.requestTimeoutMs, 10_000),
      });
      c = (conn.connect(broker.host, broker.port) as Promise<void>).then(() => conn);
      c.catch(() => undefined);
      this.connections.set(key, c);
    }
    return c;
  }

  private async negotiate(conn: Connection): Promise<FetchApi> {
    const r = await apiVersionsV3.api.async(conn, 'clink', '1');
    const fetch = r.apiKeys.find((a) => a.apiKey === FETCH_KEY);
    const version = Math.min(17, fetch?.maxVersion ?? 0);
    const api = VERSIONS[version];
    if (!api)
      throw new ConnectorError(
        `kafka source: the broker speaks Fetch up to version ${fetch?.maxVersion ?? 'none'}; this connector needs 13 or newer (Kafka 3.1+)`,
      );
    return api;
  }

  async close(): Promise<void> {
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(all.map((c) => c.then(closeQuietly, () => undefined)));
  }
}
