/**
 * Metrics: prom-client counters and gauges under the reference's `clink_*` names. Each node owns a
 * ClinkMetrics (its own registry), so tests and embedded nodes do not share counts.
 *
 * @example
 * const metrics = new ClinkMetrics();
 * metrics.malformedFrames.inc({ role: 'coordinator' });
 * await metrics.registry.metrics(); // Prometheus text
 */
import { Counter, Registry } from 'prom-client';

export type OutboundClass = 'control' | 'bulk';
export type OutboxStopReason = 'overflow' | 'allocation' | 'write_failed' | 'flush_deadline' | 'aborted';

export class ClinkMetrics {
  readonly registry = new Registry();

  /** Frames that did not decode (or whose handler failed); each cost its peer the connection. */
  readonly malformedFrames = new Counter({
    name: 'clink_malformed_frames_total',
    help: 'Frames from a peer that did not decode or could not be handled; each cost the peer its connection',
    labelNames: ['role'] as const,
    registers: [this.registry],
  });

  /** Frames an outbox gave up, by class and the reason it stopped. */
  readonly outboundFramesDiscarded = new Counter({
    name: 'clink_coordinator_outbound_frames_discarded_total',
    help: 'Frames queued for a worker that were discarded when its outbox stopped',
    labelNames: ['class', 'reason'] as const,
    registers: [this.registry],
  });

  readonly protocolMismatches = new Counter({
    name: 'clink_protocol_mismatches_total',
    help: 'Handshakes refused because the peers protocol versions do not overlap',
    registers: [this.registry],
  });

  /** The current value of a counter with these labels (for tests and the HTTP API). */
  async value(name: string, labels: Record<string, string> = {}): Promise<number> {
    const m = this.registry.getSingleMetric(name);
    if (!m) return 0;
    const { values } = await m.get();
    return values
      .filter((v) => Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x))
      .reduce((n, v) => n + v.value, 0);
  }
}
