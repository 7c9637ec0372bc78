/**
 * Connections a node closes for what the peer did, logged one line per peer address per interval: the
 * first closure of an address in an interval in full (without a stack: a peer's protocol error is no
 * bug of ours), the rest counted and summed up in one line when the interval ends. A fuzzer or a flood
 * costs a few lines, not a line per connection; the counter (clink_connections_rejected_total, by
 * reason) is the precise record. Addresses tracked per interval are bounded; past the bound they are
 * counted together.
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { systemClock, type Clock } from '../util/index.js';

export type RejectionReason =
  'malformed' | 'too_large' | 'memory' | 'timeout' | 'backlog' | 'wrong_protocol' | 'tls' | 'refused' | 'error';

/** How often the suppressed closures of an address are summed up. */
export const REJECTION_LOG_INTERVAL_MS = 10_000;
/** Addresses tracked per interval; the others are summed as one. */
const MAX_ADDRESSES = 1_024;
const OTHERS = 'other addresses';

interface Window {
  /** Closures after the first, by reason. */
  suppressed: Map<RejectionReason, number>;
}

export class PeerRejections {
  private readonly windows = new Map<string, Window>();
  private stopTimer: (() => void) | undefined;
  private openedAt = 0;

  constructor(
    private readonly role: string,
    private readonly log: Logger,
    private readonly metrics?: ClinkMetrics,
    private readonly clock: Clock = systemClock,
    private readonly intervalMs = REJECTION_LOG_INTERVAL_MS,
  ) {}

  /** `peer` (host:port) lost its connection for `reason`; `detail` says what happened. */
  record(peer: string, reason: RejectionReason, detail: string): void {
    this.metrics?.connectionsRejected.inc({ role: this.role, reason });
    const address = hostOf(peer);
    const known =
      this.windows.get(address) ?? (this.windows.size >= MAX_ADDRESSES ? this.windows.get(OTHERS) : undefined);
    if (known) {
      known.suppressed.set(reason, (known.suppressed.get(reason) ?? 0) + 1);
      return;
    }
    const key = this.windows.size >= MAX_ADDRESSES ? OTHERS : address;
    this.windows.set(key, { suppressed: new Map() });
    if (key === OTHERS) return;
    const line = `connection from ${peer} closed (${reason}): ${detail}`;
    if (reason === 'error') this.log.info({ peer, reason }, line);
    else this.log.warn({ peer, reason }, line);
    this.arm();
  }

  private arm(): void {
    if (this.stopTimer) return;
    this.openedAt = this.clock.now();
    this.stopTimer = this.clock.every(this.intervalMs, () => this.flush());
  }

  /** Sum up each address's suppressed closures; stop ticking once nothing is tracked. */
  flush(): void {
    const seconds = Math.round((this.clock.now() - this.openedAt) / 1000);
    for (const [address, w] of this.windows) {
      const n = [...w.suppressed.values()].reduce((a, b) => a + b, 0);
      if (n === 0) continue;
      const reasons = [...w.suppressed].map(([r, k]) => `${r} ${k}`).join(', ');
      this.log.warn(
        { address, suppressed: n },
        `${n} more connections from ${address} closed in the last ${seconds} s (${reasons})`,
      );
    }
    const empty = this.windows.size === 0;
    this.windows.clear();
    this.openedAt = this.clock.now();
    if (empty) this.close();
  }

  close(): void {
    this.stopTimer?.();
    this.stopTimer = undefined;
  }
}

/** The address part of `host:port` (an IPv6 address keeps its colons). */
function hostOf(peer: string): string {
  const i = peer.lastIndexOf(':');
  return i > 0 ? peer.slice(0, i) : peer;
}
