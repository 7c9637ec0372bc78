/**
 * One member of benchmarked mesh runs (bench/mesh.ts): runs a Nexmark query with runMesh `runs` + 1
 * times in this process (the first warms it up, as a cluster's workers are warm) and prints, as its last
 * line, JSON with each measured run's CPU seconds here and, for the leader, its time from start to end
 * (the rendezvous and links excluded).
 *   node --import tsx bench/mesh-member.ts <query> <parallelism> <events> <runs> lead <n> <control> <exchange>
 *   node --import tsx bench/mesh-member.ts <query> <parallelism> <events> <runs> join <leader> <exchange>
 */
import { NO_CHECKPOINTS } from '../src/client/index.js';
import { loadJobModule } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';
import { ClinkMetrics } from '../src/metrics/index.js';
import { runMesh, topologyShape } from '../src/mesh/index.js';
import { createPhysicalPlan } from '../src/plan/index.js';
import { buildJob } from '../src/sdk/index.js';
import { queryFile } from './nexmark.js';

const [query, p, events, runs, role, a, b, c] = process.argv.slice(2);
const parallelism = Number(p);
const params = { events: events!, sink: 'blackhole' };
const loaded = await loadJobModule(queryFile(query!));
const spec = buildJob(loaded.job, { parallelism, params }).spec;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const measured: { runMs: number; cpuSeconds: number; links: number }[] = [];
for (let run = 0; run <= Number(runs); run++) {
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
    onMembers: () => (cpuAtStart = cpu()),
  });
  if (run > 0) measured.push({ runMs: outcome.runMs, cpuSeconds: cpu() - cpuAtStart, links: outcome.links });
}
process.stdout.write(JSON.stringify(measured) + '\n');
