/**
 * `npm run bench`: every benchmark, each in its own process (no shared JIT state), printed as one
 * table and written to bench/results/latest.json and latest.html.
 *
 *   npm run bench                      everything (about 12 minutes on 2 cores)
 *   npm run bench -- --quick           fewer events and runs: under 3 minutes
 *   npm run bench -- --only <name>     one benchmark (a group below) or one Nexmark query (q0 ... q12)
 *   npm run bench -- --json            also print the results as JSON
 *
 * Groups: nexmark-local, nexmark-sql, nexmark-cluster, scale, checkpoint, recovery, state-restore, rescale, takeover, tls, mesh, submit, latency, protocol, kafka.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BackpressureBench } from './backpressure.js';
import type { CheckpointBench } from './checkpoint.js';
import type { LatencyResult } from './cluster.js';
import { CLUSTER_QUERIES, QUERIES, SQL_QUERIES } from './nexmark.js';
import type { ThroughputResult } from './protocol.js';
import type { RecoveryBench } from './recovery.js';
import type { StateRestoreResult } from './state-restore.js';
import type { RescaleBench } from './rescale.js';
import { ETCD_LEASE_TTL_S, type TakeoverBench } from './takeover.js';
import type { KafkaBench } from './kafka.js';
import type { TlsBench } from './tls.js';
import type { MeshBench } from './mesh.js';
import type { ScaleBench } from './scale.js';
import { writeResults, type BenchResult } from './results.js';
import type { SubmitLatency } from './submit.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const json = args.includes('--json');
const onlyAt = args.indexOf('--only');
// `npm run bench recovery` (a bare name) still works as `--only recovery`.
const only = onlyAt >= 0 ? args[onlyAt + 1] : args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--only');
const GROUPS = [
  'nexmark-local',
  'nexmark-sql',
  'nexmark-cluster',
  'scale',
  'checkpoint',
  'recovery',
  'state-restore',
  'rescale',
  'takeover',
  'tls',
  'mesh',
  'submit',
  'latency',
  'protocol',
  'kafka',
];
if (only !== undefined && !GROUPS.includes(only) && !(QUERIES as readonly string[]).includes(only)) {
  process.stderr.write(`--only ${only}: not a benchmark; give one of ${[...GROUPS, ...QUERIES].join(', ')}\n`);
  process.exit(2);
}
const wantsGroup = (g: string): boolean =>
  only === undefined || only === g || ((QUERIES as readonly string[]).includes(only) && g.startsWith('nexmark'));
const wantsQuery = (q: string): boolean =>
  only === undefined || !(QUERIES as readonly string[]).includes(only) || only === q;

const script = (name: string): string => fileURLToPath(new URL(`./${name}`, import.meta.url));

/** Run one bench script in its own process; its last JSON line. Exits on failure. */
function runScript<T>(what: string, file: string, scriptArgs: string[] = []): T {
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...scriptArgs, ...(quick ? ['--quick'] : [])], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    process.stderr.write(`${what} failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}

const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const results: BenchResult[] = [];
function report(r: BenchResult, note = ''): void {
  results.push(r);
  const cell = (v: number | undefined, f: (n: number) => string, w: number): string =>
    (v === undefined ? '' : f(v)).padStart(w);
  process.stdout.write(
    `${r.name.padEnd(30)}${cell(r.recordsPerSec, (n) => fmt.format(n), 12)}${cell(r.cpuSecondsPerMillion, (n) => n.toFixed(3), 9)}` +
      `${cell(r.baselineRecordsPerSec, (n) => fmt.format(n), 12)}${cell(r.ratioToBaseline, (n) => `${(100 * n).toFixed(0)}%`, 7)}  ${note}\n`,
  );
}

process.stdout.write(
  `${'benchmark'.padEnd(30)}${'events/s'.padStart(12)}${'CPU-s/M'.padStart(9)}${'loop/s'.padStart(12)}${'ratio'.padStart(7)}  notes${quick ? ' (quick)' : ''}\n`,
);
const rss = (r: BenchResult): string =>
  r.peakRssMb ? `peak RSS ${r.peakRssMb.map((m) => m.toFixed(0)).join('/')} MB` : '';

if (wantsGroup('nexmark-local')) {
  for (const q of QUERIES.filter(wantsQuery)) {
    const stateless = ['q0', 'q1', 'q2'].includes(q);
    const events = quick ? 1_000_000 : stateless ? 4_000_000 : 2_000_000;
    const r = runScript<BenchResult>(`nexmark ${q} local`, script('nexmark.ts'), [
      'local',
      q,
      '--events',
      String(events),
      '--runs',
      quick ? '2' : '5',
    ]);
    report(r, rss(r));
  }
}
if (wantsGroup('nexmark-sql')) {
  for (const q of SQL_QUERIES.filter(wantsQuery)) {
    const events = quick ? 1_000_000 : ['q0', 'q1', 'q2'].includes(q) ? 4_000_000 : 2_000_000;
    const r = runScript<BenchResult>(`nexmark ${q} SQL`, script('nexmark.ts'), [
      'sql',
      q,
      '--events',
      String(events),
      '--runs',
      quick ? '2' : '5',
    ]);
    report(
      r,
      `SDK ${fmt.format(r.sdkRecordsPerSec as number)}/s; SQL/SDK ${(r.ratioToSdk as number).toFixed(2)}x; ${rss(r)}`,
    );
  }
}
if (wantsGroup('nexmark-cluster')) {
  for (const q of CLUSTER_QUERIES.filter(wantsQuery)) {
    for (const p of quick ? [2] : [2, 4]) {
      const events = quick ? 1_500_000 : 4_000_000;
      const r = runScript<BenchResult>(`nexmark ${q} cluster p=${p}`, script('nexmark.ts'), [
        'cluster',
        q,
        '--parallelism',
        String(p),
        '--events',
        String(events),
        '--runs',
        quick ? '1' : '3',
      ]);
      const single = results.find((x) => x.group === 'nexmark-local' && x.query === q);
      const scale = single ? `${(r.recordsPerSec! / single.recordsPerSec!).toFixed(2)}x local p=1; ` : '';
      report(
        { ...r, ...(single ? { ratioToLocal: r.recordsPerSec! / single.recordsPerSec! } : {}) },
        `${scale}${rss(r)}; channels ${String(r.channels)}`,
      );
    }
  }
}
if (wantsGroup('scale')) {
  const s = runScript<ScaleBench>('scale bench', script('scale.ts'));
  for (const q of s.queries) {
    const local = s.queries.find((x) => x.query === q.query && x.workers === 0 && x.parallelism === 1)!;
    const where =
      q.workers === 0
        ? `local p=${q.parallelism}`
        : `${q.workers} worker${q.workers > 1 ? 's' : ''} p=${q.parallelism}`;
    const same =
      q.cpuRatioToLocalSameParallelism === undefined
        ? ''
        : `, ${q.cpuRatioToLocalSameParallelism.toFixed(2)}x local p=${q.parallelism}'s`;
    report(
      { name: `${q.query} scale ${where}`, group: 'scale', ...q, ratioToLocal: q.recordsPerSec / local.recordsPerSec },
      q === local
        ? `one process (median of ${q.runs} rounds)`
        : q.workers === 0
          ? `the same plan at p=${q.parallelism} in one process: ${q.cpuRatioToLocal.toFixed(2)}x local p=1's CPU-s/M (median over ${q.runs} rounds of the ratio to the same round's p=1 run)`
          : `${(q.recordsPerSec / local.recordsPerSec).toFixed(2)}x local events/s, ${q.cpuRatioToLocal.toFixed(2)}x its CPU-s/M${same} (whole cluster; medians over ${q.runs} rounds of the ratios to the same round's local runs, ${Math.min(...q.cpuRatiosToLocal).toFixed(2)}-${Math.max(...q.cpuRatiosToLocal).toFixed(2)}x local p=1's)`,
    );
  }
  const inProcess = s.shuffle.find((x) => x.channel === 'in-process')!;
  for (const r of s.shuffle) {
    report(
      { name: `shuffle ${r.channel}`, group: 'scale', ...r },
      r === inProcess
        ? `one channel, source and sink on one worker (median of ${r.runs})`
        : `one channel between two workers: ${(r.recordsPerSec / inProcess.recordsPerSec).toFixed(2)}x the in-process records/s, ${(r.cpuSecondsPerMillion / inProcess.cpuSecondsPerMillion).toFixed(2)}x its CPU-s/M`,
    );
  }
}
if (wantsGroup('checkpoint')) {
  for (const c of runScript<CheckpointBench[]>('checkpoint bench', script('checkpoint.ts'))) {
    const cost = 1 - c.withRecordsPerSec / c.withoutRecordsPerSec;
    report(
      {
        name: `checkpoint ${c.job}`,
        group: 'checkpoint',
        recordsPerSec: c.withRecordsPerSec,
        withoutCheckpointsRecordsPerSec: c.withoutRecordsPerSec,
        costRatio: cost,
        checkpointMsMedian: c.checkpointMsMedian,
        checkpointMsMax: c.checkpointMsMax,
        checkpointBytes: c.checkpointBytes,
        checkpoints: c.checkpoints,
        keys: c.keys,
        worstLoopStallMsWith: c.worstLoopStallMsWith,
        worstLoopStallMsWithout: c.worstLoopStallMsWithout,
      },
      `every 1 s: ${(100 * cost).toFixed(0)}% cost (${fmt.format(c.withoutRecordsPerSec)}/s without); checkpoint p50 ${c.checkpointMsMedian.toFixed(0)} ms, max ${c.checkpointMsMax.toFixed(0)} ms, ` +
        `${(c.checkpointBytes / 1e6).toFixed(1)} MB; loop stall ${c.worstLoopStallMsWith.toFixed(0)} ms (${c.worstLoopStallMsWithout.toFixed(0)} without)`,
    );
  }
  for (const b of runScript<BackpressureBench[]>('backpressure bench', script('backpressure.ts'))) {
    report(
      { name: `checkpoints under backpressure, ${b.mode}`, group: 'checkpoint', ...b },
      `${b.completed} in ${b.seconds} s (${b.unaligned} unaligned, ${b.failed} failed${b.switched > 0 ? `, ${b.switched} taken again unaligned` : ''}), p50 ${b.checkpointMsMedian.toFixed(0)} ms, max ${b.checkpointMsMax.toFixed(0)} ms, ` +
        `longest without one ${(b.longestGapMs / 1000).toFixed(1)} s; in flight up to ${fmt.format(b.inflightBytesMax)} B; ` +
        `workers ${b.workerRssMbStart.toFixed(0)} -> ${b.workerRssMbEnd.toFixed(0)} MB`,
    );
  }
}
if (wantsGroup('recovery')) {
  for (const r of runScript<RecoveryBench[]>('recovery bench', script('recovery.ts'))) {
    report(
      { name: `recovery ${r.subtasks} subtasks`, group: 'recovery', ...r },
      `kill -9 of 1 of ${r.workers} workers (median of ${r.runs}): lost after ${r.detectMs} ms, redeployed after ${r.redeployMs} ms, ` +
        `first checkpoint after the restart at ${r.recoveredMs} ms (${r.recoveredMsRange[0]}-${r.recoveredMsRange[1]} ms)`,
    );
  }
}
if (wantsGroup('state-restore')) {
  // The heap backend at its default heap, and the disk backend at a quarter of it with the same keys.
  for (const args of [[], ['--state-backend-type', 'disk', '--task-heap-mb', '512']]) {
    const r = runScript<StateRestoreResult>('state restore bench', script('state-restore.ts'), args);
    report(
      { name: `state restore ${r.stateBackendType} ${r.keys / 1e6} M keys`, group: 'state-restore', ...r },
      `${(r.stateBytes / 1e6).toFixed(0)} MB checkpointed in ${r.checkpointMs} ms; after kill -9 redeployed at ${r.redeployMs} ms, ` +
        `first checkpoint at ${r.recoveredMs} ms; every key exact: ${r.exact}`,
    );
    if (!r.exact) {
      process.stderr.write(`state restore bench: the output was ${r.output}, not exact\n`);
      process.exit(1);
    }
  }
}
if (wantsGroup('rescale')) {
  for (const r of runScript<RescaleBench[]>('rescale bench', script('rescale.ts'))) {
    report(
      { name: `rescale ${r.mode} ${r.from} -> ${r.to} subtasks`, group: 'rescale', ...r },
      `pause at the sinks ${r.pauseMs} ms (last batch before -> first after); request answered in ${r.requestMs} ms, job stopped ${r.stoppedMs} ms`,
    );
  }
}
if (wantsGroup('takeover')) {
  for (const t of runScript<TakeoverBench[]>('takeover bench', script('takeover.ts'))) {
    const name = `takeover ${t.election}`;
    if ('skipped' in t) report({ name, group: 'takeover', election: t.election }, `not measured: ${t.skipped}`);
    else
      report(
        { name, group: 'takeover', ...t },
        `kill -9 of the leader (median of ${t.runs}${t.election === 'etcd' ? `, lease ${ETCD_LEASE_TTL_S} s` : ''}): standby elected after ${t.electedMs} ms, ` +
          `first checkpoint under it at ${t.recoveredMs} ms (${t.recoveredMsRange[0]}-${t.recoveredMsRange[1]} ms), restored from checkpoint ${t.restoredFrom}`,
      );
  }
}
if (wantsGroup('kafka')) {
  const k = runScript<KafkaBench>('kafka bench', script('kafka.ts'));
  report(
    { name: 'kafka pass-through at-least-once', group: 'kafka', recordsPerSec: k.atLeastOnceRecordsPerSec, ...k },
    `100-byte records, p=1, broker on the same cores (median of ${k.runs})`,
  );
  report(
    { name: 'kafka pass-through exactly-once', group: 'kafka', recordsPerSec: k.exactlyOnceRecordsPerSec, ...k },
    `a transaction per 1 s checkpoint: ${(100 * (k.exactlyOnceRecordsPerSec / k.atLeastOnceRecordsPerSec)).toFixed(0)}% of at-least-once`,
  );
}
if (wantsGroup('tls')) {
  const t = runScript<TlsBench>('tls bench', script('tls.ts'));
  report(
    {
      name: `${t.query} 2 workers p=${t.parallelism} mTLS`,
      group: 'tls',
      recordsPerSec: t.tlsRecordsPerSec,
      cpuSecondsPerMillion: t.tlsCpuSecondsPerMillion,
      ...t,
    },
    `plain ${fmt.format(t.plainRecordsPerSec)}/s (${t.plainCpuSecondsPerMillion.toFixed(3)} CPU-s/M): TLS costs ${(100 * (1 - t.tlsRecordsPerSec / t.plainRecordsPerSec)).toFixed(0)}% of throughput (median of ${t.runs}; channels ${t.channels})`,
  );
}
if (wantsGroup('mesh')) {
  for (const m of runScript<MeshBench[]>('mesh bench', script('mesh.ts'))) {
    report(
      {
        name: `${m.query} mesh of 2 p=${m.parallelism}`,
        group: 'mesh',
        recordsPerSec: m.meshRecordsPerSec,
        cpuSecondsPerMillion: m.meshCpuSecondsPerMillion,
        ...m,
      },
      `cluster of 2 workers ${fmt.format(m.clusterRecordsPerSec)}/s (${m.clusterCpuSecondsPerMillion.toFixed(3)} CPU-s/M): mesh/cluster ${(m.meshRecordsPerSec / m.clusterRecordsPerSec).toFixed(2)}x; connections ${m.meshLinks} link vs ${m.clusterSockets} channel sockets (median of ${m.runs})`,
    );
  }
}
if (wantsGroup('submit')) {
  const s = runScript<SubmitLatency>('submit bench', script('submit.ts'));
  report(
    { name: 'submit', group: 'submit', ...s },
    `${(s.moduleBytes / 1e6).toFixed(1)} MB module: clink submit ${s.cliFirstMs.toFixed(0)} ms first, ${s.cliRepeatMedianMs.toFixed(0)} ms repeated; in a client ${s.inProcessFirstMs.toFixed(0)} ms first, ${s.inProcessRepeatMedianMs.toFixed(0)} ms repeated`,
  );
}
if (wantsGroup('latency')) {
  const c = runScript<LatencyResult>('latency bench', script('cluster.ts'), ['--run']);
  report(
    { ...c, name: 'submit to running', group: 'latency', workload: c.name },
    `${c.name}: RUNNING after ${c.medianMs.running} ms (p90 ${c.p90Ms.running}, cold ${c.coldMs.running}); completed after ${c.medianMs.completed} ms`,
  );
}
if (wantsGroup('protocol')) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', script('protocol.ts'), '--run'], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`protocol bench failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  for (const line of r.stdout.trim().split('\n')) {
    const p = JSON.parse(line) as ThroughputResult;
    const mb = (n: number): string => ((n * p.bytes) / 1e6).toFixed(0);
    report(
      { ...p, name: `codec ${p.name}`, group: 'protocol' },
      `encode ${fmt.format(p.encodePerSec)}/s (${mb(p.encodePerSec)} MB/s), decode ${fmt.format(p.decodePerSec)}/s (${mb(p.decodePerSec)} MB/s), ${p.bytes} bytes`,
    );
  }
}

const written = await writeResults(fileURLToPath(new URL('./results/', import.meta.url)), results, { quick });
process.stdout.write(`\nwrote ${written.json} and ${written.html}\n`);
if (json) process.stdout.write(JSON.stringify(results, null, 2) + '\n');
