/**
 * Where followers (workers, clients) learn who leads: the leader record in the HA directory, or the
 * value proclaimed in etcd. Read before every session, never cached across one.
 */
import { HA_DEFAULTS } from '../config/index.js';
import type { LeaderInfo } from './election.js';
import { EtcdLeaderKeys } from './etcd-election.js';
import { readLeader } from './file-election.js';

export interface LeaderSourceOptions {
  haDir?: string;
  etcdEndpoints?: string[];
  etcdCluster?: string;
}

export interface LeaderSource {
  /** What the source names it (for messages). */
  readonly describe: string;
  current(): Promise<LeaderInfo | undefined>;
  close(): void;
}

/** A source of the current leader, or undefined when neither --ha-dir nor --etcd-endpoints is set. */
export function leaderSource(o: LeaderSourceOptions): LeaderSource | undefined {
  if (o.etcdEndpoints && o.etcdEndpoints.length > 0) {
    const keys = new EtcdLeaderKeys(o.etcdEndpoints, o.etcdCluster ?? HA_DEFAULTS.etcdCluster);
    return {
      describe: `etcd ${o.etcdEndpoints.join(',')} (cluster ${o.etcdCluster ?? HA_DEFAULTS.etcdCluster})`,
      current: () => keys.currentLeader(),
      close: () => keys.close(),
    };
  }
  if (o.haDir) {
    const dir = o.haDir;
    return { describe: `the HA directory ${dir}`, current: () => readLeader(dir), close: () => undefined };
  }
  return undefined;
}
