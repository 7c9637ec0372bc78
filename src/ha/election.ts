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

import type { Logger } from '../log/index.js';

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

/**
 * What every election keeps the same way: whether it leads and at which epoch, who is told when it wins
 * or loses, and closing. A subclass decides how leadership is won, calls `won(epoch, where)` then and
 * `lost(why)` when it goes.
 */
export abstract class ElectionBase {
  protected leading = false;
  protected epoch = 0;
  protected closed = false;
  private readonly becomeLeader: ((epoch: number) => void | Promise<void>)[] = [];
  private readonly loseLeadership: ((why: string) => void)[] = [];

  constructor(protected readonly log: Logger) {}

  get isLeader(): boolean {
    return this.leading;
  }

  onBecomeLeader(fn: (epoch: number) => void | Promise<void>): void {
    this.becomeLeader.push(fn);
  }

  onLoseLeadership(fn: (why: string) => void): void {
    this.loseLeadership.push(fn);
  }

  /** Leadership won at `epoch` (recorded already): say so, then tell each listener in turn. */
  protected async won(epoch: number, where: string): Promise<void> {
    this.epoch = epoch;
    this.leading = true;
    this.log.info({ epoch }, `elected leader in ${where} with epoch ${epoch}`);
    for (const fn of this.becomeLeader) await fn(epoch);
  }

  /** Leadership lost, or standing for it stopped (said at error when it never led): tell each listener once per loss. */
  protected lost(why: string, o: { quietly?: boolean; where?: string } = {}): void {
    if (this.closed) return;
    const wasLeading = this.leading;
    this.leading = false;
    if (!wasLeading && !o.quietly)
      this.log.error(`stopped standing for leadership${o.where ? ` ${o.where}` : ''}: ${why}`);
    for (const fn of this.loseLeadership) fn(why);
  }
}
