/**
 * Nexmark benchmarks, with Nexmark's accounting: events generated (people, auctions and bids alike)
 * per second, the generator included, results into a blackhole sink.
 *
 *   node --import tsx bench/nexmark.ts local <query> [--events N] [--runs R]
 *     the query of examples/nexmark on the local runtime at parallelism 1, in this process; for q0, q1
 *     and q2 also the same logic as a hand-written loop over the same generator (the ceiling of one
 *     Node core), the two alternating run by run so machine noise hits both alike.
 *   node --import tsx bench/nexmark.ts sql <query> [--events N] [--runs R]
 *     the query of examples/nexmark/sql (after ddl.sql, into a blackhole table as the suite does)
 *     beside its SDK version, both at parallelism 1 in this process, alternating run by run.
 *   node --import tsx bench/nexmark.ts cluster <query> --parallelism P [--events N] [--runs R]
 *     the query on an embedded cluster of 2 worker processes.
 *
 * Prints one JSON line: the BenchResult. Figures are medians over the runs, after one warm-up.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadJobModule } from '../src/loader/index.js';
import { nexmarkGenerator, runJob, type JobDefinition } from '../src/index.js';
import { benchDebloatTargetMs, runOn, startBenchCluster } from './dataplane.js';
import { median, type BenchResult } from './results.js';

const root = fileURLToPath(new URL('..', import.meta.url));
export const QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q11', 'q12'] as const;
export const CLUSTER_QUERIES = ['q0', 'q1', 'q5', 'q12'] as const;
/** The queries with a SQL version in examples/nexmark/sql. */
export const SQL_QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q11', 'q12'] as const;
export const queryFile = (q: string): string => join(root, 'examples/nexmark', `${q}.ts`);

let sunk = 0;
const sink = (v: unknown): void => {
  if (v !== undefined) sunk++;
};

/** q0-q2 as plain loops over the same generator: what one Node core can do with no engine at all. */
const BASELINES: Record<string, (events: number) => void> = {
  q0(events) {
    const g = nexmarkGenerator();
    for (let n = 0; n < events; n++) {
      const e = g.event(n);
      if (e.kind === 'bid')
        sink({ auction: e.auction, bidder: e.bidder, price: e.price, dateTime: e.dateTime, extra: e.extra });
    }
  },
  q1(events) {
    const g = nexmarkGenerator();
    for (let n = 0; n < events; n++) {
      const e = g.event(n);
      if (e.kind === 'bid')
        sink({ auction: e.auction, bidder: e.bidder, price: 0.908 * e.price, dateTime: e.dateTime, extra: e.extra });
    }
  },
  q2(events) {
    const g = nexmarkGenerator();
    for (let n = 0; n < events; n++) {
      const e = g.event(n);
      if (e.kind === 'bid' && e.auction % 123 === 0) sink({ auction: e.auction, price: e.price });
    }
  },
};

/** One run of a query (at parallelism 1 unless said) in this process: events/s and this process's CPU per million events. */
export async function localRun(
  job: JobDefinition,
  events: number,
  parallelism = 1,
): Promise<{ recordsPerSec: number; cpuSecondsPerMillion: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await runJob(job, {
    parallelism,
    params: { events: String(events), sink: 'blackhole' },
    debloatTargetMs: benchDebloatTargetMs(),
  });
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { recordsPerSec: events / wall, cpuSecondsPerMillion: (c.user + c.system) / 1e6 / (events / 1e6) };
}

export async function runLocal(query: string, events: number, runs: number): Promise<BenchResult> {
  const { job } = await loadJobModule(queryFile(query));
  const baseline = BASELINES[query];
  const rates: number[] = [];
  const cpus: number[] = [];
  const loops: number[] = [];
  for (let run = 0; run <= runs; run++) {
    const measured = await localRun(job, events);
    let loopRate = 0;
    if (baseline) {
      const l0 = performance.now();
      baseline(events);
      loopRate = events / ((performance.now() - l0) / 1000);
    }
    if (run === 0) continue; // warm-up
    rates.push(measured.recordsPerSec);
    cpus.push(measured.cpuSecondsPerMillion);
    if (baseline) loops.push(loopRate);
  }
  const recordsPerSec = median(rates);
  return {
    name: `${query} local p=1`,
    group: 'nexmark-local',
    query,
    parallelism: 1,
    workers: 0,
    events,
    runs,
    recordsPerSec,
    cpuSecondsPerMillion: median(cpus),
    ...(baseline ? { baselineRecordsPerSec: median(loops), ratioToBaseline: recordsPerSec / median(loops) } : {}),
    peakRssMb: [process.resourceUsage().maxRSS / 1024],
  };
}

/** The SQL job of a query, its results into a blackhole table (Nexmark's discard_sink). */
async function sqlJob(query: string): Promise<JobDefinition> {
  const { SqlCatalog, SqlSession, sqlJobDefinition } = await import('../src/sql/index.js');
  const dir = join(root, 'examples/nexmark/sql');
  const [ddl, text] = await Promise.all([
    readFile(join(dir, 'ddl.sql'), 'utf8'),
    readFile(join(dir, `${query}.sql`), 'utf8'),
  ]);
  const session = new SqlSession(await SqlCatalog.open(['nexmark', 'blackhole']));
  const results = await session.execute(ddl + text, { mode: 'compile' });
  const select = results.at(-1)!;
  if (select.kind !== 'job') throw new Error(`${query}.sql does not end with a query`);
  const columns = select.job.columns.map((c, i) => `\`${c}\` ${select.job.columnTypes[i]}`).join(', ');
  const insert = await session.execute(
    `CREATE TEMPORARY TABLE discard_sink (${columns}) WITH ('connector' = 'blackhole'); INSERT INTO discard_sink ${select.statement};`,
    { mode: 'compile' },
  );
  const job = insert.at(-1)!;
  if (job.kind !== 'job') throw new Error('unreachable');
  return sqlJobDefinition({ name: `nexmark-${query}-sql`, version: '1' }, job.job.script);
}

/** The SQL version against the SDK version, alternating run by run; the ratio is SQL's rate over the SDK's. */
export async function runSql(query: string, events: number, runs: number): Promise<BenchResult> {
  const [sql, { job: sdk }] = await Promise.all([sqlJob(query), loadJobModule(queryFile(query))]);
  const params = { events: String(events), sink: 'blackhole' };
  const rates: number[] = [];
  const sdkRates: number[] = [];
  const cpus: number[] = [];
  for (let run = 0; run <= runs; run++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await runJob(sql, { parallelism: 1, params });
    const wall = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const s0 = performance.now();
    await runJob(sdk, { parallelism: 1, params });
    const sdkWall = (performance.now() - s0) / 1000;
    if (run === 0) continue; // warm-up
    rates.push(events / wall);
    sdkRates.push(events / sdkWall);
    cpus.push((c.user + c.system) / 1e6 / (events / 1e6));
  }
  const recordsPerSec = median(rates);
  return {
    name: `${query} SQL local p=1`,
    group: 'nexmark-sql',
    query,
    parallelism: 1,
    workers: 0,
    events,
    runs,
    recordsPerSec,
    cpuSecondsPerMillion: median(cpus),
    sdkRecordsPerSec: median(sdkRates),
    ratioToSdk: recordsPerSec / median(sdkRates),
    peakRssMb: [process.resourceUsage().maxRSS / 1024],
  };
}

export async function runCluster(
  query: string,
  parallelism: number,
  events: number,
  runs: number,
): Promise<BenchResult> {
  const file = queryFile(query);
  const cluster = await startBenchCluster(file, parallelism);
  try {
    const r = await runOn(cluster, file, parallelism, { events: String(events), sink: 'blackhole' }, events, runs);
    return {
      name: `${query} 2 workers p=${parallelism}`,
      group: 'nexmark-cluster',
      query,
      parallelism,
      workers: 2,
      events,
      runs,
      recordsPerSec: r.recordsPerSec,
      cpuSecondsPerMillion: r.cpuSecondsPerMillion,
      peakRssMb: r.peakRssMb,
      channels: `local=${r.edges.local} socket=${r.edges.socket}`,
    };
  } finally {
    await cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [mode, query] = process.argv.slice(2);
  const flag = (name: string, dflt: number): number => {
    const i = process.argv.indexOf(`--${name}`);
    return i < 0 ? dflt : Number(process.argv[i + 1]);
  };
  if (!query || !(QUERIES as readonly string[]).includes(query))
    throw new Error(`usage: nexmark.ts local|cluster <${QUERIES.join('|')}> [--parallelism P] [--events N] [--runs R]`);
  const result =
    mode === 'cluster'
      ? await runCluster(query, flag('parallelism', 2), flag('events', 4_000_000), flag('runs', 3))
      : mode === 'sql'
        ? await runSql(query, flag('events', 2_000_000), flag('runs', 3))
        : await runLocal(query, flag('events', 2_000_000), flag('runs', 3));
  process.stdout.write(JSON.stringify({ ...result, checksum: sunk }) + '\n');
}
