// OTLP/HTTP export against a minimal receiver started here: a real cluster's coordinator (--otlp-endpoint)
// sends clink.submit and clink.checkpoint spans with their attributes and the Prometheus registry as OTLP
// metrics; a receiver that refuses every export is counted in clink_otlp_export_failures_total while the
// node runs on.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { waitFor } from '../helpers.js';
import { loadJobModule } from '../../src/loader/index.js';
import { buildJob } from '../../src/sdk/index.js';
import { ClusterHarness } from '../harness/cluster.js';

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface OtlpSpan {
  name: string;
  attributes: { key: string; value: AnyValue }[];
  status?: { code?: number; message?: string };
}

/** A receiver of OTLP/HTTP JSON: what arrived at /v1/traces and /v1/metrics; `refuse` answers 503 instead. */
async function receiver(refuse = false) {
  const spans: OtlpSpan[] = [];
  const metricNames = new Set<string>();
  let requests = 0;
  const body = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  };
  const server = createServer((req, res) => {
    requests++;
    void body(req).then((b) => {
      if (refuse) {
        res.writeHead(503).end();
        return;
      }
      if (req.url === '/v1/traces') {
        for (const rs of (b as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans)
          for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      } else if (req.url === '/v1/metrics') {
        for (const rm of (b as { resourceMetrics: { scopeMetrics: { metrics: { name: string }[] }[] }[] })
          .resourceMetrics)
          for (const sm of rm.scopeMetrics) for (const m of sm.metrics) metricNames.add(m.name);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    spans,
    metricNames,
    requests: () => requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const attr = (s: OtlpSpan, key: string): string | number | boolean | undefined => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : (v?.boolValue ?? v?.doubleValue));
};

describe('OTLP export', () => {
  test('a checkpointed job on a cluster: clink.submit and clink.checkpoint spans with their attributes, and the registry as OTLP metrics', async () => {
    const otlp = await receiver();
    const h = await ClusterHarness.start({
      workers: 1,
      slots: 2,
      coordinatorArgs: [`--otlp-endpoint=127.0.0.1:${otlp.port}`, '--otlp-interval-ms=500'],
    });
    try {
      const loaded = await loadJobModule(resolve(import.meta.dirname, '../fixtures/jobs/unbounded.ts'), {
        cacheDir: join(h.dir, 'c'),
      });
      const client = await h.client();
      const params = { rate: '2000' };
      const { jobId } = await client.submit({
        module: loaded,
        spec: buildJob(loaded.job, { parallelism: 1, params }).spec,
        params,
        buildParallelism: 1,
        checkpoint: { checkpointDir: join(h.dir, 'ckpt'), intervalMs: 200 },
      });
      await waitFor('a completed clink.checkpoint span', () =>
        otlp.spans.some((s) => s.name === 'clink.checkpoint' && attr(s, 'clink.checkpoint.outcome') === 'completed'),
      );
      const checkpoint = otlp.spans.find(
        (s) => s.name === 'clink.checkpoint' && attr(s, 'clink.checkpoint.outcome') === 'completed',
      )!;
      assert.equal(attr(checkpoint, 'clink.job.id'), jobId);
      assert.equal(attr(checkpoint, 'clink.checkpoint.kind'), 'periodic');
      assert.ok(Number(attr(checkpoint, 'clink.checkpoint.id')) >= 1);
      assert.ok(Number(attr(checkpoint, 'clink.checkpoint.bytes')) > 0);
      assert.equal(typeof attr(checkpoint, 'clink.checkpoint.duration_ms'), 'number');
      const submit = otlp.spans.find((s) => s.name === 'clink.submit');
      assert.ok(submit, 'a clink.submit span');
      assert.equal(attr(submit, 'clink.job.id'), jobId);
      assert.equal(attr(submit, 'clink.job.name'), 'unbounded');
      assert.equal(attr(submit, 'clink.tasks'), 2);
      await waitFor(
        'the registry as OTLP metrics',
        () =>
          otlp.metricNames.has('clink_checkpoints_completed_total') &&
          otlp.metricNames.has('clink_coordinator_jobs_submitted_total'),
      );
      await client.cancel(jobId);
    } finally {
      await h.close();
      await otlp.close();
    }
  });

  test('a collector that refuses every export: failures are counted and said, the node runs on', async () => {
    const otlp = await receiver(true);
    const h = await ClusterHarness.start({
      workers: 1,
      slots: 1,
      coordinatorArgs: [`--otlp-endpoint=127.0.0.1:${otlp.port}`, '--otlp-interval-ms=200'],
    });
    try {
      await waitFor('a refused export', () => otlp.requests() >= 2);
      await h.waitForLog(
        h.coordinator,
        /^OTLP export of (metrics|traces) failed: .*\(counted in clink_otlp_export_failures_total; said at most once a minute\)$/,
      );
      const metrics = await fetch(`http://127.0.0.1:${h.httpPort}/metrics`).then((r) => r.text());
      assert.match(metrics, /clink_otlp_export_failures_total\{signal="metrics"\} [1-9]/);
      assert.equal((await h.http('/api/v1/health')).status, 200);
    } finally {
      await h.close();
      await otlp.close();
    }
  });
});
