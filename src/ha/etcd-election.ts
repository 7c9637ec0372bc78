/**
 * etcd election (`--etcd-endpoints`): a campaign on `clink/<cluster>/leader` under a lease of
 * `--etcd-lease-ttl-s` (default 10) kept alive by the client. Lease loss is the failure detector: a
 * leader that is frozen, partitioned or dead loses leadership within the TTL, and the oldest standby
 * campaign is elected. On election the leader raises `clink/<cluster>/epoch` by one in a transaction
 * (compare-and-swap on the key's version), so epochs rise by one per leader as with the file lock; the
 * leader's address is proclaimed as the campaign's value, which followers read.
 */
import { HA_DEFAULTS } from '../config/index.js';
import { Etcd3, type Campaign } from 'etcd3';
import { EnvironmentError } from '../errors.js';
import type { Logger } from '../log/index.js';
import { ElectionBase, nodeName, type LeaderElection, type LeaderInfo } from './election.js';

export interface EtcdElectionOptions {
  endpoints: string[];
  cluster: string;
  /** @default 10 */
  leaseTtlS?: number;
  host: string;
  log: Logger;
}

/** The etcd client of an election or a follower, with its keys. */
export class EtcdLeaderKeys {
  readonly client: Etcd3;
  readonly electionName: string;
  readonly epochKey: string;

  constructor(endpoints: string[], cluster: string) {
    this.client = new Etcd3({ hosts: endpoints, dialTimeout: 3_000 });
    this.electionName = `clink/${cluster}/leader`;
    this.epochKey = `clink/${cluster}/epoch`;
  }

  /** The leader now proclaimed, if any. */
  async currentLeader(): Promise<LeaderInfo | undefined> {
    const v = await this.client.election(this.electionName).leader();
    if (!v) return undefined;
    try {
      const info = JSON.parse(v) as LeaderInfo;
      return info.port > 0 ? info : undefined;
    } catch {
      return undefined;
    }
  }

  close(): void {
    this.client.close();
  }
}

export class EtcdElection extends ElectionBase implements LeaderElection {
  private readonly keys: EtcdLeaderKeys;
  private campaign: Campaign | undefined;

  constructor(private readonly options: EtcdElectionOptions) {
    super(options.log);
    this.keys = new EtcdLeaderKeys(options.endpoints, options.cluster);
  }

  async start(): Promise<void> {
    const { log, endpoints, leaseTtlS = HA_DEFAULTS.etcdLeaseTtlS } = this.options;
    try {
      await this.keys.client.get(this.keys.epochKey).string();
    } catch (err) {
      throw new EnvironmentError(
        `cannot reach etcd at ${endpoints.join(',')} (--etcd-endpoints): ${(err as Error).message}`,
        { cause: err },
      );
    }
    const campaign = (this.campaign = this.keys.client
      .election(this.keys.electionName, leaseTtlS)
      .campaign(JSON.stringify({ host: '', port: 0, epoch: 0, at: Date.now(), node: nodeName(this.options.host) })));
    campaign.on('elected', () => {
      this.elected().catch((err: unknown) => this.lost(`could not take the epoch: ${(err as Error).message}`));
    });
    campaign.on('error', (err: Error) => this.lost(`its etcd lease was lost (${err.message})`));
    log.info(
      `standing for leadership in etcd ${endpoints.join(',')} as ${this.keys.electionName} (lease TTL ${leaseTtlS} s)`,
    );
  }

  /** Raise the epoch key by one (compare-and-swap on its version), returning the new epoch. */
  private async nextEpoch(): Promise<number> {
    const { client, epochKey } = this.keys;
    for (;;) {
      const res = await client.get(epochKey).exec();
      const kv = res.kvs[0];
      const current = kv ? Number(kv.value.toString()) : 0;
      const next = current + 1;
      const txn = await client
        .if(epochKey, 'Version', '==', kv ? Number(kv.version) : 0)
        .then(client.put(epochKey).value(String(next)))
        .commit();
      if (txn.succeeded) return next;
    }
  }

  private async elected(): Promise<void> {
    if (this.closed) return;
    await this.won(await this.nextEpoch(), 'etcd');
  }

  async announce(info: Omit<LeaderInfo, 'epoch' | 'at' | 'node'>): Promise<void> {
    if (!this.leading || !this.campaign) throw new Error('only a leader announces itself');
    await this.campaign.proclaim(
      JSON.stringify({ ...info, epoch: this.epoch, at: Date.now(), node: nodeName(this.options.host) }),
    );
  }

  currentLeader(): Promise<LeaderInfo | undefined> {
    return this.keys.currentLeader();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.leading = false;
    await this.campaign?.resign().catch(() => undefined);
    this.keys.close();
  }
}
