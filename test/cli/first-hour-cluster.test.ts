// The first hour's traps against a running cluster, each closed: a client, a worker or a browser at the
// wrong port, a worker that never reached its coordinator, output a script can parse, a clean goodbye.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { runCli, useJobDir } from '../harness/cli.js';
import { FIRST_HOUR_JOBS } from '../harness/cli-jobs.js';
import { ClusterHarness } from '../harness/cluster.js';
import { heldPort, waitFor } from '../helpers.js';

const clink = runCli;
/** The jobs' directory, made before the tests and removed after them. */
const dir = useJobDir('clink-first-hour-cluster-', FIRST_HOUR_JOBS);

describe('the command line against a cluster', () => {
  let h: ClusterHarness;
  before(async () => {
    h = await ClusterHarness.start({ workers: 1, slots: 4 });
  });
  after(async () => {
    await h?.close();
  });

  test('a client pointed at the HTTP port is told so (exit 1), not "frame header claims 1213486160 bytes"', async () => {
    const r = await clink(['jobs', `--coordinator=127.0.0.1:${h.httpPort}`], h.dir);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `error: 127.0.0.1:${h.httpPort} is an HTTP port (perhaps the coordinator's --http-port), not its control port; point --coordinator at the control port (clink node --port, default 6123)\n`,
    );
  });

  test('an HTTP request at the control port is answered 400 in HTTP, naming the HTTP API; TLS is refused and logged', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const s = connect(h.controlPort, '127.0.0.1', () => s.write('GET /api/v1/jobs HTTP/1.1\r\nhost: x\r\n\r\n'));
      let text = '';
      s.on('data', (d) => (text += d));
      s.on('close', () => resolve(text));
      s.on('error', reject);
    });
    assert.match(reply, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.ok(
      reply.endsWith(
        `\r\n\r\nthis is clink's control port, which speaks its binary protocol, not HTTP; the HTTP API is at http://127.0.0.1:${h.httpPort}\n`,
      ),
      reply,
    );
    await h.waitForLog(
      h.coordinator,
      /^connection from 127\.0\.0\.1:\d+ closed \(wrong_protocol\): it sent an HTTP request to the control port; the HTTP API is at http:\/\/127\.0\.0\.1:\d+$/,
    );
    const tlsError = await new Promise<Error>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: h.controlPort, rejectUnauthorized: false });
      s.on('error', resolve);
      s.on('secureConnect', () => resolve(new Error('handshake completed')));
    });
    assert.notEqual(tlsError.message, 'handshake completed');
    // From the same address within the interval: counted, and summed up in the log when the interval ends.
    await waitFor(
      'the TLS attempt counted',
      async () =>
        (await h.workerMetric(h.coordinator, 'clink_connections_rejected_total', {
          role: 'coordinator',
          reason: 'wrong_protocol',
        })) === 2,
    );
  });

  test('a worker pointed at the HTTP port exits 1 saying so, instead of retrying forever', async () => {
    const w = h.spawnNode('wrong-port', ['--role=worker', '--id=wrong-port', `--coordinator-port=${h.httpPort}`]);
    assert.equal(await w.exited, 1);
    assert.ok(
      w.logs.some((l) =>
        String(l.msg).includes(
          `error: worker wrong-port cannot join the coordinator: 127.0.0.1:${h.httpPort} is an HTTP port`,
        ),
      ),
      JSON.stringify(w.logs.map((l) => l.msg)),
    );
  });

  test('a worker that has never reached its coordinator stops on SIGINT, and on SIGTERM', async () => {
    const held = await heldPort();
    await held.close();
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const w = h.spawnNode(`lonely-${signal}`, [
        '--role=worker',
        `--id=lonely-${signal}`,
        `--coordinator-port=${held.port}`,
        '--reconnect-max-backoff-ms=200',
      ]);
      await h.waitForLog(w, /cannot register with the coordinator/);
      w.child.kill(signal);
      assert.equal(await w.exited, 0, `${signal}: ${JSON.stringify(w.logs.slice(-3))}`);
    }
  });

  test('submit --wait --output json prints one JSON document on stdout, nothing else', async () => {
    const r = await clink(
      ['submit', join(dir(), 'rate.ts'), `--coordinator=127.0.0.1:${h.controlPort}`, '--wait', '--output', 'json'],
      h.dir,
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { jobId: string; state: string; collected: { rows: unknown[] } };
    assert.match(doc.jobId, /^[0-9a-f]{8}$/);
    assert.equal(doc.state, 'FINISHED');
    assert.equal(doc.collected.rows.length, 5);
    const detached = await clink(
      ['submit', join(dir(), 'rate.ts'), `--coordinator=127.0.0.1:${h.controlPort}`, '--output', 'json'],
      h.dir,
    );
    assert.deepEqual(Object.keys(JSON.parse(detached.stdout) as object), ['jobId']);
  });

  test("print() on a worker goes to the worker's stdout as whole plain lines; its log lines stay JSON on stderr", async () => {
    const r = await clink(
      ['submit', join(dir(), 'printer.ts'), `--coordinator=127.0.0.1:${h.controlPort}`, '--wait'],
      h.dir,
    );
    assert.equal(r.code, 0, r.stderr);
    const printed = [...h.nodes].flatMap((n) => n.stdout.split('\n').filter((l) => l.startsWith('printed-')));
    assert.equal(printed.length, 2000);
    assert.ok(printed.every((l) => /^printed-\d+-x{40}$/.test(l)));
    for (const n of h.nodes)
      assert.ok(!n.logs.some((l) => String(l.msg).includes('printed-')), `${n.name}: a printed line in its log`);
  });

  test('a worker stopped cleanly deregisters: "worker retired: <id> (shutdown)", never "worker lost"', async () => {
    const w = await h.addWorker([], 'leaver');
    await h.waitForLog(h.coordinator, /worker registered: leaver/);
    w.child.kill('SIGTERM');
    assert.equal(await w.exited, 0);
    await h.waitForLog(h.coordinator, /^worker retired: leaver \(shutdown\)$/);
    const { workers } = (await h.http<{ workers: { workerId: string }[] }>('/api/v1/workers')).body;
    assert.ok(
      workers.some((x) => x.workerId === 'w1') && !workers.some((x) => x.workerId === 'leaver'),
      JSON.stringify(workers),
    );
    // The session is gone from the books: no watchdog verdict can follow.
    assert.ok(!h.coordinator.logs.some((l) => /worker lost: leaver/.test(String(l.msg))));
  });
});
