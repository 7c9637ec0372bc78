/**
 * Metrics: prom-client counters and gauges under the reference's `clink_*` names. Each node owns a
 * ClinkMetrics (its own registry), so tests and embedded nodes do not share counts.
 *
 * @example
 * const metrics = new ClinkMetrics();
 * metrics.malformedFrames.inc({ role: 'coordinator' });
 * await metrics.registry.metrics(); // Prometheus text
 */
import { AggregatorRegistry, Counter, Gauge, Registry, type CounterConfiguration } from 'prom-client';
import { CHANNEL_LABELS, ChannelCounts } from './channel-counts.js';
import type { startOtlp as startOtlpType } from './otlp.js';

export { ChannelCount, ChannelCounts, type ChannelLabelValues } from './channel-counts.js';

export type OutboundClass = 'control' | 'bulk';
export type OutboxStopReason = 'overflow' | 'allocation' | 'write_failed' | 'flush_deadline' | 'aborted';
/**
 * Why a checkpoint was aborted, as Flink's CheckpointFailureReason: it did not complete within its
 * timeout (CHECKPOINT_EXPIRED), a subtask could not snapshot (CHECKPOINT_DECLINED), or its COMPLETED
 * marker could not be written (FINALIZE_CHECKPOINT_FAILURE).
 */
export const CHECKPOINT_FAILURE_REASONS = ['expired', 'declined', 'finalize_failed', 'switched_to_unaligned'] as const;
export type CheckpointFailureReason = (typeof CHECKPOINT_FAILURE_REASONS)[number];

/** A counter by reason with every reason shown from the start (at 0), so a dashboard's rate has a series to read. */
function zeroedByReason<R extends string>(
  reasons: readonly R[],
  config: CounterConfiguration<'reason'>,
): Counter<'reason'> {
  const c = new Counter(config);
  for (const reason of reasons) c.labels({ reason }).inc(0);
  return c;
}

/** A per-channel counter: job, edge index, upstream and downstream subtask (`task#index`); `collect` runs before it is read. */
function channelCounter(
  registry: Registry,
  name: string,
  help: string,
  collect?: () => void,
): Counter<(typeof CHANNEL_LABELS)[number]> {
  return new Counter({
    name,
    help,
    labelNames: CHANNEL_LABELS,
    registers: [registry],
    ...(collect ? { collect } : {}),
  });
}

export class ClinkMetrics {
  readonly registry = new Registry();

  /** Frames that did not decode (or whose handler failed); each cost its peer the connection. */
  readonly malformedFrames = new Counter({
    name: 'clink_malformed_frames_total',
    help: 'Frames from a peer that did not decode or could not be handled; each cost the peer its connection',
    labelNames: ['role'] as const,
    registers: [this.registry],
  });

  /** OTLP exports attempted and failed, by signal (metrics, traces); spans dropped for want of room. */
  readonly otlpExports = new Counter({
    name: 'clink_otlp_exports_total',
    help: 'OTLP exports attempted, by signal',
    labelNames: ['signal'] as const,
    registers: [this.registry],
  });
  readonly otlpExportFailures = new Counter({
    name: 'clink_otlp_export_failures_total',
    help: 'OTLP exports that failed, by signal',
    labelNames: ['signal'] as const,
    registers: [this.registry],
  });
  readonly otlpSpansDropped = new Counter({
    name: 'clink_otlp_spans_dropped_total',
    help: 'Spans dropped because the export queue was full',
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

  readonly handshakeFailures = new Counter({
    name: 'clink_coordinator_handshake_failures_total',
    help: 'Connections dropped before admission: no first frame in time, or refused at the pending-connection cap',
    registers: [this.registry],
  });

  readonly admissionsEvicted = new Counter({
    name: 'clink_coordinator_admissions_evicted_total',
    help: 'Connections being admitted that a newcomer evicted at the pending-connection cap (the least advanced of the busiest address)',
    registers: [this.registry],
  });

  readonly clientSessionsRefused = new Counter({
    name: 'clink_coordinator_client_sessions_refused_total',
    help: 'HelloClients refused at --max-client-sessions',
    registers: [this.registry],
  });

  readonly clientSessionsDropped = new Counter({
    name: 'clink_coordinator_client_sessions_dropped_total',
    help: 'Client sessions the coordinator closed, by reason (idle, slow_reader)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly workersLost = new Counter({
    name: 'clink_coordinator_workers_lost_total',
    help: 'Workers declared lost, by verdict (silence, stall, overflow)',
    labelNames: ['verdict'] as const,
    registers: [this.registry],
  });

  readonly jobsSubmitted = new Counter({
    name: 'clink_coordinator_jobs_submitted_total',
    help: 'Jobs accepted for deployment',
    registers: [this.registry],
  });

  readonly connectionsRejected = new Counter({
    name: 'clink_connections_rejected_total',
    help: "Connections a node closed for what the peer did, by the node's role and why: malformed (a frame that does not decode), too_large (over the frame cap), memory (over the node's frames in flight), timeout, backlog, wrong_protocol, tls (a failed handshake), refused (a data connection for no subtask here, or without the attempt's secret), error (the socket failed)",
    labelNames: ['role', 'reason'] as const,
    registers: [this.registry],
  });
  readonly authRefusals = new Counter({
    name: 'clink_coordinator_auth_refusals_total',
    help: 'Connections refused for a missing or wrong CLINK_AUTH_TOKEN, by the role they claimed',
    labelNames: ['role'] as const,
    registers: [this.registry],
  });

  readonly haJobsRecovered = new Counter({
    name: 'clink_ha_jobs_recovered_total',
    help: 'Jobs a newly elected leader took over from the job store and deployed again',
    registers: [this.registry],
  });

  readonly haRecoveryFailed = new Counter({
    name: 'clink_ha_recovery_failed_total',
    help: 'Jobs a newly elected leader could not take over (dropped: each needs a resubmit)',
    registers: [this.registry],
  });

  readonly jobsEnded = new Counter({
    name: 'clink_coordinator_jobs_ended_total',
    help: 'Jobs that reached a terminal state, by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly fencedFrames = new Counter({
    name: 'clink_worker_fenced_frames_total',
    help: 'Frames a worker dropped because they came from a superseded coordinator (a lower epoch)',
    registers: [this.registry],
  });

  readonly workerSessionsRefused = new Counter({
    name: 'clink_coordinator_worker_sessions_refused_total',
    help: 'Registrations of new workers refused as busy: --max-worker-sessions were open',
    registers: [this.registry],
  });
  readonly dataConnectionsRefused = new Counter({
    name: 'clink_data_connections_refused_total',
    help: "Data connections refused: for no subtask or channel here, or without the attempt's secret",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly dataLinks = new Gauge({
    name: 'clink_data_links',
    help: 'Data links open at this process, each carrying every channel from one worker to another: dialled here (out) or by a peer (in)',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  readonly channelRecordsSent = channelCounter(
    this.registry,
    'clink_channel_records_sent_total',
    'Records a channel sent to another process',
    () => this.channelSent.report(),
  );
  readonly channelBytesSent = channelCounter(
    this.registry,
    'clink_channel_bytes_sent_total',
    'Bytes a channel sent to another process',
    () => this.channelSent.report(),
  );
  readonly channelRecordsReceived = channelCounter(
    this.registry,
    'clink_channel_records_received_total',
    'Records a channel received from another process',
    () => this.channelReceived.report(),
  );
  readonly channelBytesReceived = channelCounter(
    this.registry,
    'clink_channel_bytes_received_total',
    'Bytes a channel received from another process',
    () => this.channelReceived.report(),
  );
  /** What channels sent and received, counted per batch as plain numbers and reported into the four counters above when read. */
  readonly channelSent = new ChannelCounts(this.channelRecordsSent, this.channelBytesSent);
  readonly channelReceived = new ChannelCounts(this.channelRecordsReceived, this.channelBytesReceived);
  readonly channelBackpressured = channelCounter(
    this.registry,
    'clink_channel_backpressured_seconds_total',
    'Time a channel’s sender waited for credit (or a local queue for room)',
  );

  readonly pluginBytesShipped = new Counter({
    name: 'clink_coordinator_plugin_bytes_shipped_total',
    help: 'Job-module bytes (code and source map) the coordinator sent to workers in Deploys',
    registers: [this.registry],
  });

  readonly pluginShipsDeduped = new Counter({
    name: 'clink_coordinator_plugin_ships_deduped_total',
    help: 'Deploys that referred to a job module the worker session already holds instead of sending it',
    registers: [this.registry],
  });

  readonly submitPluginCacheHits = new Counter({
    name: 'clink_coordinator_submit_plugin_cache_hits_total',
    help: 'Submits whose job module the coordinator already held, so no module bytes were uploaded',
    registers: [this.registry],
  });

  readonly submitPluginBytesReceived = new Counter({
    name: 'clink_coordinator_submit_plugin_bytes_received_total',
    help: 'Job-module bytes clients uploaded with submits',
    registers: [this.registry],
  });

  readonly checkpointsCompleted = new Counter({
    name: 'clink_checkpoints_completed_total',
    help: 'Checkpoints (and savepoints) whose COMPLETED marker is durable',
    registers: [this.registry],
  });

  readonly checkpointsAborted = zeroedByReason(CHECKPOINT_FAILURE_REASONS, {
    name: 'clink_checkpoints_aborted_total',
    help: 'Checkpoints aborted, by reason: expired (not complete within its timeout), declined (a subtask could not snapshot), finalize_failed (its COMPLETED marker could not be written), switched_to_unaligned (aligned past --aligned-checkpoint-timeout-ms on a job with a worker too old to convert it in place, taken again unaligned)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly alignmentsCancelled = new Counter({
    name: 'clink_checkpoint_alignments_cancelled_total',
    help: "Barrier alignments a newer checkpoint's barrier cancelled (the older checkpoint was given up upstream)",
    registers: [this.registry],
  });

  readonly lastCheckpointDurationMs = new Gauge({
    name: 'clink_checkpoint_last_duration_ms',
    help: 'Trigger to durable marker, of the newest completed checkpoint',
    registers: [this.registry],
  });

  readonly lastCheckpointBytes = new Gauge({
    name: 'clink_checkpoint_last_size_bytes',
    help: 'State written by the newest completed checkpoint',
    registers: [this.registry],
  });

  readonly workerControlAttempts = new Counter({
    name: 'clink_worker_control_connection_attempts_total',
    help: 'Registrations with the coordinator this worker tried',
    registers: [this.registry],
  });

  readonly workerControlDisconnects = new Counter({
    name: 'clink_worker_control_disconnects_total',
    help: 'Coordinator sessions of this worker that ended',
    registers: [this.registry],
  });

  readonly workerControlReconnects = new Counter({
    name: 'clink_worker_control_reconnects_total',
    help: 'Sessions this worker registered again after losing one',
    registers: [this.registry],
  });

  readonly workerControlConnected = new Gauge({
    name: 'clink_worker_control_connected',
    help: '1 while this worker has a session with the coordinator',
    registers: [this.registry],
  });

  readonly subtaskRetries = new Counter({
    name: 'clink_job_subtask_retries_total',
    help: 'Failed subtasks of jobs without checkpoints retried (their failover region run again from the beginning)',
    registers: [this.registry],
  });

  readonly jobRestarts = new Counter({
    name: 'clink_job_restarts_total',
    help: 'Jobs restarted from their last checkpoint after a worker loss',
    registers: [this.registry],
  });

  readonly lastCheckpointAlignmentMs = new Gauge({
    name: 'clink_checkpoint_last_alignment_ms',
    help: 'The longest barrier alignment of any subtask in the newest completed checkpoint',
    registers: [this.registry],
  });

  readonly lastCheckpointStartDelayMs = new Gauge({
    name: 'clink_checkpoint_last_start_delay_ms',
    help: 'The longest start delay (trigger to first barrier) of any subtask in the newest completed checkpoint',
    registers: [this.registry],
  });

  readonly lastCheckpointInflightBytes = new Gauge({
    name: 'clink_checkpoint_last_persisted_inflight_bytes',
    help: 'Bytes of in-flight records the newest completed checkpoint wrote (unaligned; 0 when aligned)',
    registers: [this.registry],
  });

  readonly checkpointsUnaligned = new Counter({
    name: 'clink_checkpoints_unaligned_total',
    help: 'Completed checkpoints whose barriers overtook the records ahead of them (a subset of clink_checkpoints_completed_total)',
    registers: [this.registry],
  });

  /** More registries' metrics (prom-client JSON) to merge into the exposition: a worker's job threads. */
  readonly sources = new Set<() => Promise<object[][]>>();

  /** The text exposition: this registry, with each source's metrics summed in. */
  async exposition(): Promise<string> {
    if (this.sources.size === 0) return this.registry.metrics();
    const parts: object[][] = [await this.registry.getMetricsAsJSON()];
    for (const source of this.sources) parts.push(...(await source()));
    return AggregatorRegistry.aggregate(parts).metrics();
  }

  /** A gauge whose value is read when metrics are scraped. */
  gauge(name: string, help: string, read: () => number): void {
    // The newest reader wins: a coordinator started again in one process (HA re-election) reads its own state.
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

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
export { NO_TRACING, type Span, type SpanAttributes, type Tracer } from './tracing.js';
export type { OtlpExport, OtlpOptions } from './otlp.js';
/** The OTLP exporter, loaded on demand: the OpenTelemetry SDK is large and most nodes do not export. */
export const loadOtlp = (): Promise<{ startOtlp: typeof startOtlpType }> => import('./otlp.js');
