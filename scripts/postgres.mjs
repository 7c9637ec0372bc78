// A throw-away PostgreSQL server for tests: initdb into a fresh folder (trust auth, loopback only,
// max_prepared_transactions for two-phase-commit sinks), started with pg_ctl on a free port. As root
// (as CI runs) it runs as the postgres user, and apt installs postgresql when it is missing.
// restart(hard) stops it (immediate mode with hard: a crash, then recovery) and starts it again.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort } from './ports.mjs';

function pgBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? join(root, versions.at(-1), 'bin') : undefined;
}

export async function startPostgres(dir, aptInstall) {
  if (!pgBin()) aptInstall('postgresql', '/usr/lib/postgresql/*/bin/initdb');
  const bin = pgBin();
  if (!bin) throw new Error('PostgreSQL is not installed: apt-get install postgresql');
  const root = process.getuid?.() === 0;
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  // The postgres user must pass through the folder above it too (a mkdtemp folder is 0700).
  if (root) chmodSync(dirname(dir), 0o711);
  if (root) spawnSync('chown', ['postgres:postgres', dir]);
  const run = (cmd, args) => {
    const r = root
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  const data = join(dir, 'data');
  const port = await freePort();
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  const options = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c max_prepared_transactions=64 -c fsync=off -c max_connections=200`;
  const start = () =>
    run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  const stop = (mode) => run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
  start();
  console.log(`postgres on 127.0.0.1:${port}`);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    env: { CLINK_TEST_PG: url },
    /** Stop the server (immediate with `hard`: a crash, then recovery), wait `downMs`, start it again. */
    restart: async (hard = false, downMs = 0) => {
      stop(hard ? 'immediate' : 'fast');
      await new Promise((r) => setTimeout(r, downMs));
      start();
    },
    stop: async () => {
      try {
        stop('fast');
      } catch {
        /* already down */
      }
    },
  };
}
