/**
 * Leader election behind one interface, with two implementations: the file lock (`--ha-dir`, one host
 * or a shared filesystem that honours locks) and etcd (`--etcd-endpoints`, across hosts).
 *
 * A coordinator in HA mode starts an election and waits: while it is a standby its control port stays
 * closed. When it is elected it learns its epoch (one above every earlier leader's), sets it on the
 * coordinator before the listener opens, then announces where it listens (`announce`). Losing
 * leadership (the lock holder gone, the lease expired) is reported once; the coordinator must stop
 * acting at once, since a successor may already lead.
 */

/** Where the leader listens, and its epoch. */
export interface LeaderInfo {
  host: string;
  port: number;
  /** Its HTTP API, when it serves one. */
  httpUrl?: string;
  epoch: number;
  /** When it was elected (ms since the epoch). */
  at: number;
  /** An id of the node, for logs (host and pid). */
  node: string;
}

export interface LeaderElection {
  /** Stand for leadership; resolves once standing (the probe passed, the holder runs). */
  start(): Promise<void>;
  readonly isLeader: boolean;
  /** Called once elected, with the new epoch (above every earlier leader's). */
  onBecomeLeader(fn: (epoch: number) => void | Promise<void>): void;
  /** Called once if leadership is lost after it was won, with why. */
  onLoseLeadership(fn: (why: string) => void): void;
  /** Tell followers where this leader listens (only while leading). */
  announce(info: Omit<LeaderInfo, 'epoch' | 'at' | 'node'>): Promise<void>;
  /** The leader now announced, if any. */
  currentLeader(): Promise<LeaderInfo | undefined>;
  /** Stop standing (a leader resigns); idempotent. */
  close(): Promise<void>;
}

/** How a node names itself in leader records. */
export function nodeName(host: string): string {
  return `${host}/${process.pid}`;
}
