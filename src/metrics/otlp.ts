/**
 * OTLP/HTTP export (--otlp-endpoint): the node's Prometheus registry and the engine's spans, through the
 * OpenTelemetry SDK (2.x) and its JSON exporters to `<endpoint>/v1/metrics` and `/v1/traces`. The
 * registry is read at each export by a MetricProducer, so /metrics and OTLP report the same counts.
 * Exports run on timers off every request path; a failed one is counted
 * (clink_otlp_export_failures_total) and logged at most once a minute, never retried in a loop; spans wait
 * in a bounded buffer (oldest dropped, counted in clink_otlp_spans_dropped_total).
 */
import { OTLP_DEFAULTS } from '../config/index.js';
import { SpanStatusCode, ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  PeriodicExportingMetricReader,
  type CollectionResult,
  type MetricData,
  type MetricProducer,
  type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from './index.js';
import type { SpanAttributes, Tracer } from './tracing.js';

export interface OtlpOptions {
  /** `host[:port]` (port 4318 when absent) or a URL. */
  endpoint: string;
  /** How often metrics are exported. @default 10,000 */
  intervalMs?: number;
  /** The resource's service.name: `clink-coordinator`, `clink-worker`. */
  serviceName: string;
  /** service.instance.id: a worker's id, a coordinator's address. */
  instanceId?: string;
}

/** Spans held for export at most; past it the oldest are dropped. */
export const OTLP_MAX_QUEUED_SPANS = 2048;
const FAILURE_LOG_EVERY_MS = 60_000;

export function otlpBaseUrl(endpoint: string): string {
  const url = /^https?:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`;
  const u = new URL(url);
  if (!u.port && !/^https?:\/\/[^/]+:\d+/.test(url)) u.port = '4318';
  return u.origin + u.pathname.replace(/\/$/, '');
}

const hr = (ms: number): HrTime => [Math.floor(ms / 1000), (ms % 1000) * 1e6];

/** The Prometheus registry as OTel metric data: counters as cumulative sums, gauges, histograms. */
function registryProducer(metrics: ClinkMetrics, startedAt: number): MetricProducer {
  return {
    async collect(): Promise<CollectionResult> {
      const now = Date.now();
      const out: MetricData[] = [];
      for (const m of await metrics.registry.getMetricsAsJSON()) {
        const type = String(m.type);
        const descriptor = { name: m.name, description: m.help, unit: '', valueType: ValueType.DOUBLE };
        const point = (value: number, labels: Attributes) => ({
          startTime: hr(startedAt),
          endTime: hr(now),
          attributes: labels,
          value,
        });
        if (type === 'counter' || type === 'gauge') {
          const dataPoints = m.values.map((v) => point(v.value, v.labels as Attributes));
          out.push(
            type === 'counter'
              ? {
                  descriptor,
                  aggregationTemporality: AggregationTemporality.CUMULATIVE,
                  dataPointType: DataPointType.SUM,
                  isMonotonic: true,
                  dataPoints,
                }
              : {
                  descriptor,
                  aggregationTemporality: AggregationTemporality.CUMULATIVE,
                  dataPointType: DataPointType.GAUGE,
                  dataPoints,
                },
          );
        } else if (type === 'histogram') {
          // prom-client lists <name>_bucket (cumulative, by le), _sum and _count per label set.
          const series = new Map<string, { labels: Attributes; le: [number, number][]; sum: number; count: number }>();
          for (const v of m.values) {
            const { le, ...labels } = v.labels as Record<string, string | number>;
            const key = JSON.stringify(labels);
            const s = series.get(key) ?? { labels, le: [], sum: 0, count: 0 };
            series.set(key, s);
            const name = (v as { metricName?: string }).metricName ?? '';
            if (name.endsWith('_bucket') && le !== '+Inf') s.le.push([Number(le), v.value]);
            else if (name.endsWith('_sum')) s.sum = v.value;
            else if (name.endsWith('_count')) s.count = v.value;
          }
          const dataPoints = [...series.values()].map((s) => {
            const sorted = s.le.sort((a, b) => a[0] - b[0]);
            const counts = sorted.map(([, c], i) => c - (i > 0 ? sorted[i - 1]![1] : 0));
            counts.push(s.count - (sorted.at(-1)?.[1] ?? 0));
            return {
              ...point(0, s.labels),
              value: { buckets: { boundaries: sorted.map(([b]) => b), counts }, sum: s.sum, count: s.count },
            };
          });
          out.push({
            descriptor,
            aggregationTemporality: AggregationTemporality.CUMULATIVE,
            dataPointType: DataPointType.HISTOGRAM,
            dataPoints,
          });
        }
      }
      return {
        resourceMetrics: {
          resource: resourceFromAttributes({}),
          scopeMetrics: [{ scope: { name: 'clink' }, metrics: out }],
        },
        errors: [],
      };
    },
  };
}

/** An exporter that counts what it sends and what fails, and says so in the log at most once a minute. */
function counted<E extends PushMetricExporter | SpanExporter>(
  exporter: E,
  what: 'metrics' | 'traces',
  metrics: ClinkMetrics,
  log: Logger,
  handed: (items: ResourceMetrics | ReadableSpan[]) => void = () => undefined,
): E {
  let lastLogged = 0;
  const original = exporter.export.bind(exporter) as (
    items: never,
    done: (r: { code: number; error?: Error }) => void,
  ) => void;
  (exporter as { export: unknown }).export = (
    items: ResourceMetrics | ReadableSpan[],
    done: (r: { code: number; error?: Error }) => void,
  ) => {
    handed(items);
    original(items as never, (r) => {
      metrics.otlpExports.inc({ signal: what });
      if (r.code !== 0) {
        metrics.otlpExportFailures.inc({ signal: what });
        if (Date.now() - lastLogged >= FAILURE_LOG_EVERY_MS) {
          lastLogged = Date.now();
          log.warn(
            { signal: what },
            `OTLP export of ${what} failed: ${r.error?.message ?? 'unknown error'} (counted in clink_otlp_export_failures_total; said at most once a minute)`,
          );
        }
      }
      done(r);
    });
  };
  return exporter;
}

export interface OtlpExport {
  tracer: Tracer;
  /** Export what is pending, then stop. */
  close(): Promise<void>;
}

export function startOtlp(o: OtlpOptions, metrics: ClinkMetrics, log: Logger): OtlpExport {
  const base = otlpBaseUrl(o.endpoint);
  const resource = resourceFromAttributes({
    'service.name': o.serviceName,
    ...(o.instanceId ? { 'service.instance.id': o.instanceId } : {}),
  });
  const reader = new PeriodicExportingMetricReader({
    exporter: counted(
      new OTLPMetricExporter({
        url: `${base}/v1/metrics`,
        timeoutMillis: Math.min(5_000, o.intervalMs ?? OTLP_DEFAULTS.intervalMs),
      }),
      'metrics',
      metrics,
      log,
    ),
    exportIntervalMillis: o.intervalMs ?? OTLP_DEFAULTS.intervalMs,
    // An export may take at most the interval (the SDK requires it), and never more than 5 s.
    exportTimeoutMillis: Math.min(5_000, o.intervalMs ?? OTLP_DEFAULTS.intervalMs),
    metricProducers: [registryProducer(metrics, Date.now())],
  });
  const meters = new MeterProvider({ resource, readers: [reader] });
  // Spans ended but not yet handed to the exporter: past the processor's queue it drops them silently.
  let queued = 0;
  const onHanded = (items: ResourceMetrics | ReadableSpan[]): void =>
    void (queued = Math.max(0, queued - (Array.isArray(items) ? items.length : 0)));
  const processor = new BatchSpanProcessor(
    counted(
      new OTLPTraceExporter({ url: `${base}/v1/traces`, timeoutMillis: 5_000 }),
      'traces',
      metrics,
      log,
      onHanded,
    ),
    {
      maxQueueSize: OTLP_MAX_QUEUED_SPANS,
      scheduledDelayMillis: Math.min(o.intervalMs ?? OTLP_DEFAULTS.intervalMs, 5_000),
    },
  );
  const traces = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const otel = traces.getTracer('clink');
  const tracer: Tracer = {
    start(name: string, attributes: SpanAttributes) {
      const span = otel.startSpan(name, { attributes });
      return {
        end(more?: SpanAttributes, error?: string) {
          if (more) span.setAttributes(more);
          if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
          if (queued >= OTLP_MAX_QUEUED_SPANS) metrics.otlpSpansDropped.inc();
          else queued++;
          span.end();
        },
      };
    },
  };
  log.info(
    `exporting metrics and spans over OTLP/HTTP to ${base} every ${o.intervalMs ?? OTLP_DEFAULTS.intervalMs} ms`,
  );
  return {
    tracer,
    async close() {
      await Promise.allSettled([meters.shutdown(), traces.shutdown()]);
    },
  };
}
