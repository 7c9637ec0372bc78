// Runs every *.test.ts under test/ and src/ with node's test runner (via tsx). Node 20 neither finds
// .ts test files nor expands globs by itself, and a run with no files would pass silently, so the files
// are listed here and an empty list is an error.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startServices } from './services.mjs';

function find(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.')) find(p, out);
    else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

// Suites, by folder. The default (`npm test`): the in-process tests (decisions on injected clocks, the
// runtime, SQL, the protocol, sockets within one process), a few minutes on two cores. `--process`:
// test/cli and test/integration, which start real coordinator, worker and CLI processes to prove the
// wiring. `--slow`: the chaos suites under test/chaos (kill -9, SIGSTOP, restarts, seeded exactly-once
// runs: minutes of real processes). `--services`: the tests under test/services, which need external
// servers (etcd, Kafka, PostgreSQL, NATS) that scripts/services.mjs installs and starts. .ci/run runs all
// four; everything needs only Node and node_modules.
const SUITES = { '--services': 'services', '--slow': 'slow', '--process': 'process' };
const wanted =
  process.argv
    .slice(2)
    .map((a) => SUITES[a])
    .find(Boolean) ?? 'default';
const services = wanted === 'services';
const filter = process.argv.slice(2).filter((a) => !(a in SUITES));
const inDir = (f, d) => f.split(/[\\/]/).includes(d);
const suite = (f) =>
  inDir(f, 'services')
    ? 'services'
    : inDir(f, 'chaos')
      ? 'slow'
      : inDir(f, 'cli') || inDir(f, 'integration')
        ? 'process'
        : 'default';
let files = [...find('test'), ...find('src')].sort().filter((f) => filter.length > 0 || suite(f) === wanted);
if (filter.length > 0) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// The service tests get their servers from here: started (and installed through apt when missing) for
// this run, stopped after it, their addresses passed in the environment.
const servers = services ? await startServices() : { env: {}, stop: async () => undefined };
// Node 20 applies --test-timeout to each file as a whole, not to the tests in it: a file of chaos or
// service scenarios (each bounded by its own `timeout`) takes minutes on two busy cores, so those suites
// get 15 minutes a file; the default and process suites' files (the CLI's spawn a process per test) get five.
const fileTimeoutMs = (wanted === 'default' || wanted === 'process') && filter.length === 0 ? 300_000 : 900_000;
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', `--test-timeout=${fileTimeoutMs}`, ...files],
  {
    stdio: 'inherit',
    env: { ...process.env, ...servers.env },
  },
);
await servers.stop();
process.exit(r.status ?? 1);
