/**
 * One member of a benchmarked mesh run (bench/mesh.ts): runs a Nexmark query with runMesh and prints,
 * as its last line, JSON with its CPU seconds and, for the leader, the run's time from start to end
 * (the rendezvous and links excluded).
 *   node --import tsx bench/mesh-member.ts <query> <parallelism> <events> lead <n> <control> <exchange>
 *   node --import tsx bench/mesh-member.ts <query> <parallelism> <events> join <leader> <exchange>
 */
import { NO_CHECKPOINTS } from '../src/client/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { ClinkMetrics } from '../src/metrics/index.js';
import { runMesh, topologyShape } from '../src/mesh/index.js';
import { createPhysicalPlan } from '../src/plan/index.js';
import { buildJob } from '../src/sdk/index.js';
import { queryFile } from './nexmark.js';

const [query, p, events, role, a, b, c] = process.argv.slice(2);
const parallelism = Number(p);
const params = { events: events!, sink: 'blackhole' };
const loaded = await loadJobModule(queryFile(query!));
const spec = buildJob(loaded.job, { parallelism, params }).spec;
let cpuAtStart = 0;
const outcome = await runMesh({
  role: role === 'lead' ? { lead: Number(a), control: b! } : { join: a! },
  exchange: role === 'lead' ? c! : b!,
  module: loaded,
  plan: createPhysicalPlan(spec),
  specJson: JSON.stringify(spec),
  shape: topologyShape(spec, loaded.sha256),
  params,
  buildParallelism: parallelism,
  checkpoint: NO_CHECKPOINTS,
  restart: false,
  timeoutMs: 60_000,
  batchSize: 1_000,
  batchLingerMs: 0,
  log: createLogger({ level: 'error' }),
  metrics: new ClinkMetrics(),
  onListening: (port) => process.stdout.write(`control ${port}\n`),
  onMembers: () => {
    const u = process.cpuUsage();
    cpuAtStart = (u.user + u.system) / 1e6;
  },
});
const u = process.cpuUsage();
process.stdout.write(JSON.stringify({ runMs: outcome.runMs, cpuSeconds: (u.user + u.system) / 1e6 - cpuAtStart, links: outcome.links }) + '\n');
