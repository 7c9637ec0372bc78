// A NATS server with JetStream for tests (Debian's nats-server, installed through apt when missing),
// on a free loopback port with its store in `dir`.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './ports.mjs';

function answers(port) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

export async function startNats(dir, aptInstall) {
  aptInstall('nats-server', 'nats-server');
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const spawnServer = () =>
    spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', join(dir, 'store')], {
      stdio: ['ignore', 'ignore', 'ignore'],
    });
  const ready = async (proc) => {
    const deadline = Date.now() + 30_000;
    while (!(await answers(port))) {
      if (proc.exitCode !== null) throw new Error(`nats-server exited with ${proc.exitCode} before it was ready`);
      if (Date.now() > deadline) throw new Error('nats-server did not listen within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  let proc = spawnServer();
  await ready(proc);
  console.log(`nats on 127.0.0.1:${port}`);
  const stop = async (signal = 'SIGTERM') => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill(signal);
    await exited;
  };
  return {
    env: { CLINK_TEST_NATS: `127.0.0.1:${port}` },
    url: `127.0.0.1:${port}`,
    /** Stop the server (SIGKILL with `hard`), wait `downMs`, and start it again on the same port and store. */
    restart: async (hard = false, downMs = 0) => {
      await stop(hard ? 'SIGKILL' : 'SIGTERM');
      await new Promise((r) => setTimeout(r, downMs));
      proc = spawnServer();
      await ready(proc);
    },
    stop: () => stop(),
  };
}
