// Security from the command line, as an operator meets it: a node beyond loopback refuses to start open
// (unless --insecure, which it says); incoherent TLS flags are refused one line each; a TLS + token
// cluster of real processes is reached by `clink jobs` with the right flags and refused without them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, runCli, TSX } from '../harness/cli.js';
import { makeCerts, type CertFiles } from '../harness/certs.js';

let dir: string;
let certs: CertFiles;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clink-security-'));
  certs = await makeCerts({ coordinator: { dns: ['localhost'], ips: ['127.0.0.1'] }, client: {} });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(certs.dir, { recursive: true, force: true });
});

/** Start `clink node` and wait for its ready file; returns its ports, its stderr so far, and a stop. */
async function node(args: string[], env: Record<string, string> = {}) {
  const ready = join(dir, `ready-${Math.random().toString(16).slice(2)}.json`);
  const child = spawn(process.execPath, ['--import', TSX, BIN, 'node', ...args, `--ready-file=${ready}`], {
    cwd: dir,
    env: { ...process.env, CLINK_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  while (!existsSync(ready)) {
    if (child.exitCode !== null) throw new Error(`node exited ${child.exitCode}: ${stderr}`);
    await sleep(20);
  }
  const ports = JSON.parse(await readFile(ready, 'utf8')) as { controlPort: number };
  return {
    ports,
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describe('clink, secured', () => {
  test('a coordinator or worker reachable beyond loopback refuses to start open; --insecure starts it and says so; a token or TLS is protection enough', async () => {
    const open = await runCli(['node', '--role=coordinator', '--bind-host=0.0.0.0', '--port=0'], dir);
    assert.equal(open.code, 2);
    assert.match(
      open.stderr,
      /^error: --bind-host 0\.0\.0\.0 is reachable beyond this machine, and this coordinator has no protection: anyone who reaches its control port can submit a job, which is code that runs on every worker\. Give it --tls-cert and --tls-key \(with --tls-client-ca for mTLS\), or set CLINK_AUTH_TOKEN, or pass --insecure to run it open$/m,
    );
    const worker = await runCli(['node', '--role=worker', '--data-host=0.0.0.0'], dir);
    assert.equal(worker.code, 2);
    assert.match(
      worker.stderr,
      /^error: --data-host 0\.0\.0\.0 is reachable beyond this machine, and this worker has no protection: .*Give it --tls-ca, --tls-cert and --tls-key, or set CLINK_AUTH_TOKEN/m,
    );
    const insecure = await node(['--role=coordinator', '--bind-host=0.0.0.0', '--port=0', '--insecure']);
    assert.match(
      insecure.stderr(),
      /running without TLS or a token beyond loopback \(--bind-host 0\.0\.0\.0, --insecure\)/,
    );
    assert.equal(await insecure.stop(), 0);
    const withToken = await node(['--role=coordinator', '--bind-host=0.0.0.0', '--port=0'], {
      CLINK_AUTH_TOKEN: 's3cret',
    });
    assert.doesNotMatch(withToken.stderr(), /--insecure/);
    assert.equal(await withToken.stop(), 0);
  });

  test('incoherent TLS flags are refused at start, one line each', async () => {
    const r = await runCli(
      [
        'node',
        '--role=coordinator',
        `--tls-cert=${certs.leaf.coordinator!.cert}`,
        `--tls-client-ca=${certs.ca}`,
        `--tls-ca=${certs.ca}`,
      ],
      dir,
    );
    assert.equal(r.code, 2);
    assert.deepEqual(
      r.stderr.split('\n').filter((l) => l.startsWith('error: ')),
      [
        'error: --tls-cert and --tls-key go together: the certificate and its private key',
        'error: --tls-ca and --tls-client-cert are for workers and clients; a coordinator serves --tls-cert and --tls-key (and asks for client certificates with --tls-client-ca)',
      ],
    );
    const client = await runCli(['jobs', '--tls-no-verify-hostname'], dir);
    assert.equal(client.code, 2);
    assert.match(
      client.stderr,
      /^error: --tls-no-verify-hostname needs --tls-ca: without a CA nothing would be verified at all$/m,
    );
    const missing = await runCli(
      ['node', '--role=coordinator', '--port=0', '--tls-cert=/nonexistent/cert.pem', '--tls-key=/nonexistent/key.pem'],
      dir,
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: cannot read \/nonexistent\/cert\.pem \(--tls-cert\): ENOENT/m);
  });

  test('a coordinator on mTLS with a token: clink jobs gets in with the CA, its certificate and the token, and is told what is missing otherwise', async () => {
    const leaf = certs.leaf;
    const c = await node(
      [
        '--role=coordinator',
        '--port=0',
        `--tls-cert=${leaf.coordinator!.cert}`,
        `--tls-key=${leaf.coordinator!.key}`,
        `--tls-client-ca=${certs.ca}`,
      ],
      { CLINK_AUTH_TOKEN: 's3cret' },
    );
    try {
      const at = `--coordinator=127.0.0.1:${c.ports.controlPort}`;
      const tls = [
        `--tls-ca=${certs.ca}`,
        `--tls-client-cert=${leaf.client!.cert}`,
        `--tls-client-key=${leaf.client!.key}`,
      ];
      const ok = await runCli(['jobs', at, ...tls], dir, 60_000, { CLINK_AUTH_TOKEN: 's3cret' });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, 'no jobs\n');
      const noToken = await runCli(['jobs', at, ...tls], dir, 60_000, { CLINK_AUTH_TOKEN: '' });
      assert.equal(noToken.code, 1);
      assert.match(
        noToken.stderr,
        /^error: the coordinator refused this client: authentication failed: this coordinator requires the cluster's token and the client's is missing; set CLINK_AUTH_TOKEN to it$/m,
      );
      const plain = await runCli(['jobs', at], dir, 60_000, { CLINK_AUTH_TOKEN: 's3cret' });
      assert.equal(plain.code, 1);
      assert.match(plain.stderr, /closed the connection without answering: if it serves TLS, give --tls-ca/);
    } finally {
      assert.equal(await c.stop(), 0);
    }
  });
});
