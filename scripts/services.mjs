// The external servers the service tests run against, each installed through apt when missing (as root,
// as CI runs; otherwise the message says what to install) and started on free ports in a temp dir.
// startServices() resolves to the environment that tells the tests where each one is, and a stop().
// Chromium is not a server: it is installed here and its path passed on (CLINK_TEST_CHROMIUM).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKafka } from './kafka.mjs';
import { startNats } from './nats.mjs';
import { startPostgres } from './postgres.mjs';
import { freePort } from './ports.mjs';

const has = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;

function aptInstall(pkg, bin) {
  if (has(bin)) return;
  aptGet(pkg, bin);
  if (!has(bin)) throw new Error(`${pkg} installed, but ${bin} is not on the PATH`);
}

function aptGet(pkg, what) {
  if (process.getuid?.() !== 0)
    throw new Error(
      `${what} is not installed: install the Debian package ${pkg} (apt-get install ${pkg}) or run as root to have it installed`,
    );
  console.log(`installing ${pkg} (apt-get)`);
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', pkg],
  ]) {
    const r = spawnSync('apt-get', args, {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (${r.status})`);
  }
}

async function waitForHttp(url, timeoutMs, proc, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode} before it was ready`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${what} did not answer ${url} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startEtcd(dir) {
  aptInstall('etcd-server', 'etcd');
  const [client, peer] = [await freePort(), await freePort()];
  const etcd = spawn(
    'etcd',
    [
      '--name=clink-test',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${client}`,
      `--advertise-client-urls=http://127.0.0.1:${client}`,
      `--listen-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
      `--initial-cluster=clink-test=http://127.0.0.1:${peer}`,
      '--log-level=error',
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  await waitForHttp(`http://127.0.0.1:${client}/health`, 30_000, etcd, 'etcd');
  console.log(`etcd on 127.0.0.1:${client}`);
  return {
    env: { CLINK_TEST_ETCD: `http://127.0.0.1:${client}` },
    stop: async () => {
      etcd.kill('SIGTERM');
      await new Promise((r) => (etcd.exitCode !== null ? r() : etcd.once('exit', r)));
    },
  };
}

/** Debian's Chromium for the console's browser tests (driven by playwright-core, which downloads nothing). */
function chromium() {
  aptInstall('chromium', 'chromium');
  const path = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).stdout.trim();
  console.log(`chromium at ${path}`);
  return { env: { CLINK_TEST_CHROMIUM: path }, stop: async () => undefined };
}

export async function startServices() {
  // The network-namespace suite makes packet loss with iptables (the statistic match).
  if (process.getuid?.() === 0) aptInstall('iptables', 'iptables');
  const dir = mkdtempSync(join(tmpdir(), 'clink-services-'));
  const started = [];
  try {
    started.push(await startEtcd(dir));
    started.push(await startKafka(join(dir, 'kafka')));
    started.push(await startPostgres(join(dir, 'postgres'), aptGet));
    started.push(await startNats(join(dir, 'nats'), aptInstall));
    started.push(chromium());
  } catch (err) {
    for (const s of started) await s.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    env: Object.assign({}, ...started.map((s) => s.env)),
    stop: async () => {
      for (const s of started) await s.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
