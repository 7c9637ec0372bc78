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

// `--services`: the tests under test/services, which need external servers (etcd, Kafka, PostgreSQL,
// NATS) that scripts/services.mjs installs and starts. `--slow`: the chaos suites under test/chaos (kill -9,
// SIGSTOP, restarts, seeded exactly-once runs: minutes of real processes), which `npm test` leaves out
// to stay within five minutes on two cores; .ci/run runs both. Everything needs only Node and node_modules.
const services = process.argv.includes('--services');
const slow = process.argv.includes('--slow');
const filter = process.argv.slice(2).filter((a) => a !== '--services' && a !== '--slow');
const inDir = (f, d) => f.split(/[\\/]/).includes(d);
const suite = (f) => (inDir(f, 'services') ? 'services' : inDir(f, 'chaos') ? 'slow' : 'default');
const wanted = services ? 'services' : slow ? 'slow' : 'default';
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
// get 15 minutes a file; the default suite's files (the CLI's spawn a process per test) get five.
const fileTimeoutMs = wanted === 'default' && filter.length === 0 ? 300_000 : 900_000;
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
