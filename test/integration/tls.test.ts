// TLS and mTLS with real certificates made at test time: a cluster of real processes whose control
// plane and data plane both run over mTLS, and every refusal a client or worker can meet, each with the
// message the docs promise.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { connect as tlsConnect } from 'node:tls';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ClusterClient } from '../../src/client/index.js';
import { Coordinator } from '../../src/coordinator/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';
import { loadTlsClient, loadTlsServer, type TlsClientConfig } from '../../src/net/index.js';
import { Worker } from '../../src/worker/index.js';
import { makeCerts, type CertFiles } from '../harness/certs.js';
import { ClusterHarness } from '../harness/cluster.js';
import { submitSinkJob } from '../harness/file-sink-job.js';
import { visibleLines } from '../helpers.js';

let certs: CertFiles;
before(async () => {
  certs = await makeCerts({
    coordinator: { dns: ['localhost'], ips: ['127.0.0.1'] },
    ipOnly: { ips: ['127.0.0.1'] },
    dnsNamedLikeIp: { dns: ['127.0.0.1'] },
    w1: { ips: ['127.0.0.1'] },
    w2: { ips: ['127.0.0.1'] },
    client: {},
    mallory: { rogue: true },
  });
});
after(async () => rm(certs.dir, { recursive: true, force: true }));

const clientTls = (name = 'client', ca = certs.ca): Promise<TlsClientConfig> =>
  loadTlsClient({ ca, clientCert: certs.leaf[name]!.cert, clientKey: certs.leaf[name]!.key });

/**
 * A TLS connection to a data port that then sends an empty frame: 'refused' when the server ends it with
 * a TLS alert (no certificate, or one it does not trust), 'ok' when it closes it as the frame deserves.
 */
function handshake(port: number, options: { ca: Buffer; cert?: Buffer; key?: Buffer }): Promise<'ok' | 'refused'> {
  return new Promise((resolve) => {
    let alert = false;
    const s = tlsConnect({
      host: '127.0.0.1',
      port,
      ...options,
      minVersion: 'TLSv1.3',
      checkServerIdentity: () => undefined,
    });
    // Under TLS 1.3 a server's refusal of the client's certificate arrives after the client's handshake ends.
    s.once('secureConnect', () => s.write(Buffer.from([0, 0, 0, 0])));
    s.on('error', (err: NodeJS.ErrnoException) => (alert ||= err.code?.startsWith('ERR_SSL') === true));
    s.once('close', () => resolve(alert ? 'refused' : 'ok'));
  });
}

async function attempt(f: () => Promise<ClusterClient>): Promise<string> {
  try {
    const c = await f();
    try {
      await c.listJobs();
      return 'ok';
    } finally {
      c.close();
    }
  } catch (err) {
    return (err as Error).message;
  }
}

describe('TLS', () => {
  test('a cluster over mTLS, control plane and data plane: the shuffle job across two workers writes its exact output', async () => {
    const leaf = certs.leaf;
    const h = await ClusterHarness.start({
      workers: 0,
      slots: 2,
      coordinatorArgs: [
        `--tls-cert=${leaf.coordinator!.cert}`,
        `--tls-key=${leaf.coordinator!.key}`,
        `--tls-client-ca=${certs.ca}`,
      ],
      client: { tls: await clientTls() },
    });
    try {
      for (const w of ['w1', 'w2']) {
        await h.addWorker(
          [
            `--tls-ca=${certs.ca}`,
            `--tls-cert=${leaf[w]!.cert}`,
            `--tls-key=${leaf[w]!.key}`,
            `--tls-client-cert=${leaf[w]!.cert}`,
            `--tls-client-key=${leaf[w]!.key}`,
          ],
          w,
        );
      }
      await h.waitForWorkers(2);
      const { jobId, client, out, expected } = await submitSinkJob(h, { rate: 20_000 });
      const done = await client.waitForCompletion(jobId);
      assert.equal(done.ok, true, done.error);
      assert.deepEqual(await visibleLines(out), expected);
      const view = (await h.http<{ subtasks: { workerId: string }[]; guarantee: unknown }>(`/api/v1/jobs/${jobId}`))
        .body;
      assert.deepEqual(
        view.guarantee,
        { level: 'exactly-once', limitedBy: '' },
        'datagen into the transactional file sink, with checkpoints',
      );
      const workers = new Set(view.subtasks.map((t) => t.workerId));
      assert.equal(workers.size, 2, 'the shuffle crossed workers: data connections over TLS');
      for (const w of ['w1', 'w2'])
        assert.equal(await h.workerMetric(h.worker(w), 'clink_data_connections_refused_total'), 0);
      // The data plane asks for a client certificate under mTLS too: a TLS client without one gets no connection.
      const { dataPort, jobDataPorts } = JSON.parse(await readFile(h.worker('w1').readyFile!, 'utf8')) as {
        dataPort: number;
        jobDataPorts: number[];
      };
      for (const port of [dataPort, ...jobDataPorts]) {
        assert.equal(
          await handshake(port, { ca: await readFile(certs.ca) }),
          'refused',
          `data port ${port} without a client certificate`,
        );
        assert.equal(
          await handshake(port, {
            ca: await readFile(certs.ca),
            cert: await readFile(leaf.w2!.cert),
            key: await readFile(leaf.w2!.key),
          }),
          'ok',
          `data port ${port} with one`,
        );
      }
    } finally {
      await h.close();
    }
  });

  test('every refusal a client meets says what is wrong and what to do', async () => {
    const { log, lines } = memoryLogger();
    const metrics = new ClinkMetrics();
    const mtls = await Coordinator.start(
      { port: 0 },
      {
        log,
        metrics,
        tls: await loadTlsServer({
          cert: certs.leaf.coordinator!.cert,
          key: certs.leaf.coordinator!.key,
          clientCa: certs.ca,
        }),
      },
    );
    const ipOnly = await Coordinator.start(
      { port: 0 },
      {
        log,
        metrics: new ClinkMetrics(),
        tls: await loadTlsServer({ cert: certs.leaf.ipOnly!.cert, key: certs.leaf.ipOnly!.key }),
      },
    );
    const dnsLikeIp = await Coordinator.start(
      { port: 0 },
      {
        log,
        metrics: new ClinkMetrics(),
        tls: await loadTlsServer({ cert: certs.leaf.dnsNamedLikeIp!.cert, key: certs.leaf.dnsNamedLikeIp!.key }),
      },
    );
    const plain = await Coordinator.start({ port: 0 }, { log, metrics: new ClinkMetrics() });
    // A server that accepts and says nothing: a TLS handshake with it never completes.
    const held: Socket[] = [];
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const silentPort = (silent.address() as { port: number }).port;
    try {
      const at = (c: { port: number }): string => `127.0.0.1:${c.port}`;
      assert.equal(
        await attempt(async () => ClusterClient.connect('127.0.0.1', mtls.port, { tls: await clientTls() })),
        'ok',
      );
      assert.equal(
        await attempt(() => ClusterClient.connect('127.0.0.1', mtls.port)),
        `the coordinator at ${at(mtls)} closed the connection without answering: if it serves TLS, give --tls-ca (under mTLS also --tls-client-cert and --tls-client-key)`,
      );
      // Without a certificate, or with one the client CA did not sign, the server ends the handshake (an alert or a close: either way, said the same).
      const needsCert = new RegExp(
        `^the coordinator at ${at(mtls)} refused this TLS client( \\([^)]*\\))?: it requires a client certificate its --tls-client-ca signed; give --tls-client-cert and --tls-client-key$`,
      );
      assert.match(
        await attempt(async () =>
          ClusterClient.connect('127.0.0.1', mtls.port, { tls: await loadTlsClient({ ca: certs.ca }) }),
        ),
        needsCert,
      );
      assert.match(
        await attempt(async () => ClusterClient.connect('127.0.0.1', mtls.port, { tls: await clientTls('mallory') })),
        needsCert,
      );
      assert.match(
        await attempt(async () =>
          ClusterClient.connect('127.0.0.1', mtls.port, { tls: await clientTls('client', certs.rogueCa) }),
        ),
        /^the certificate of the coordinator at 127\.0\.0\.1:\d+ does not verify against --tls-ca: /,
      );
      assert.equal(
        await attempt(async () => ClusterClient.connect('127.0.0.1', plain.port, { tls: await clientTls() })),
        `the coordinator at ${at(plain)} does not speak TLS (a plain clink port?): drop --tls-ca, or point at a port started with --tls-cert`,
      );
      // A DNS name against DNS names, an IP literal against IP addresses only.
      assert.equal(
        await attempt(async () =>
          ClusterClient.connect('localhost', ipOnly.port, { tls: await loadTlsClient({ ca: certs.ca }) }),
        ),
        "the server's certificate does not match the host localhost (it names IP Address:127.0.0.1); issue it with DNS:localhost among its names, or pass --tls-no-verify-hostname",
      );
      assert.equal(
        await attempt(async () =>
          ClusterClient.connect('127.0.0.1', dnsLikeIp.port, { tls: await loadTlsClient({ ca: certs.ca }) }),
        ),
        "the server's certificate does not match the host 127.0.0.1 (it names DNS:127.0.0.1); issue it with IP:127.0.0.1 among its names, or pass --tls-no-verify-hostname",
      );
      assert.equal(
        await attempt(async () =>
          ClusterClient.connect('localhost', ipOnly.port, {
            tls: await loadTlsClient({ ca: certs.ca, verifyHostname: false }),
          }),
        ),
        'ok',
      );
      assert.equal(
        await attempt(async () =>
          ClusterClient.connect('127.0.0.1', silentPort, { tls: await clientTls(), timeoutMs: 300 }),
        ),
        `could not connect to the coordinator at 127.0.0.1:${silentPort}: no TLS handshake within 300 ms (--handshake-timeout-ms)`,
      );
      // The coordinator's side: each refused handshake counted, and logged in words once per peer address and interval.
      assert.equal(
        lines().filter((l) =>
          /^connection from 127\.0\.0\.1:\d+ closed \(tls\): its TLS handshake failed \(.*\): a plain clink peer/.test(
            String(l.msg),
          ),
        ).length,
        1,
        JSON.stringify(lines().map((l) => l.msg)),
      );
      assert.ok((await metrics.value('clink_coordinator_handshake_failures_total')) >= 3);
      assert.ok((await metrics.value('clink_connections_rejected_total', { role: 'coordinator', reason: 'tls' })) >= 3);
    } finally {
      for (const c of [mtls, ipOnly, dnsLikeIp, plain]) await c.stop();
      for (const socket of held) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  test('under mTLS a worker id belongs to the certificate that registered it: another certificate cannot take it over', async () => {
    const { log } = memoryLogger();
    const metrics = new ClinkMetrics();
    const c = await Coordinator.start(
      { port: 0 },
      {
        log,
        metrics,
        tls: await loadTlsServer({
          cert: certs.leaf.coordinator!.cert,
          key: certs.leaf.coordinator!.key,
          clientCa: certs.ca,
        }),
      },
    );
    const config = (id: string) => ({
      id,
      coordinatorHost: '127.0.0.1',
      coordinatorPort: c.port,
      slots: 1,
      dataHost: '127.0.0.1',
      heartbeatIntervalMs: 200,
      peerUpdateTimeoutMs: 30_000,
      batchSize: 1_000,
      batchLingerMs: 0,
      taskIsolation: 'none' as const,
    });
    const server = await loadTlsServer({ cert: certs.leaf.w1!.cert, key: certs.leaf.w1!.key });
    const w1 = await Worker.start(config('w1'), {
      log,
      metrics: new ClinkMetrics(),
      tls: { client: await clientTls('w1'), server },
    });
    try {
      await assert.rejects(
        Worker.start(config('w1'), {
          log,
          metrics: new ClinkMetrics(),
          tls: { client: await clientTls('w2'), server },
        }),
        {
          message:
            "the coordinator refused the registration: worker id w1 is registered by another certificate ('w1'); give this worker an id of its own",
        },
      );
      await assert.rejects(
        Worker.start(config('w3'), {
          log,
          metrics: new ClinkMetrics(),
          tls: { client: await loadTlsClient({ ca: certs.ca }), server },
        }),
        {
          message: new RegExp(
            `^the coordinator at 127\\.0\\.0\\.1:${c.port} refused this TLS client( \\([^)]*\\))?: it requires a client certificate its --tls-client-ca signed; give --tls-client-cert and --tls-client-key$`,
          ),
        },
      );
      assert.deepEqual(
        c.workers().map((w) => [w.workerId, w.session]),
        [['w1', w1.session]],
      );
      // The same certificate registering again is the worker reconnecting: it takes its id back.
      const again = await Worker.start(config('w1'), {
        log,
        metrics: new ClinkMetrics(),
        tls: { client: await clientTls('w1'), server },
      });
      assert.deepEqual(
        c.workers().map((w) => [w.workerId, w.session]),
        [['w1', again.session]],
      );
      await again.close();
    } finally {
      await w1.close();
      await c.stop();
    }
  });
});
