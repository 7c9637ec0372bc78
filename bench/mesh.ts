/**
 * Mesh mode vs a coordinator cluster (design record 017): Nexmark q5 and q12 at parallelism 2 on a
 * 2-member mesh (two processes, `runMesh`, one link) and on an embedded cluster of 2 worker processes
 * (a connection per channel), same events, back to back. Records/s is events over the run's time (the
 * mesh: MeshStart to the end; the cluster: submit to completion, after one warm-up run); CPU-s per
 * million events is every member's, or every worker's. Both are warm: each measures `runs` runs after
 * one warm-up, the mesh's members living through all of them as the cluster's workers do.
 *   node --import tsx bench/mesh.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runOn, startBenchCluster } from './dataplane.js';
import { queryFile } from './nexmark.js';
import { median } from './results.js';
import { freePorts } from '../test/harness/mesh.js';

export interface MeshBench {
  query: string;
  parallelism: number;
  events: number;
  runs: number;
  meshRecordsPerSec: number;
  meshCpuSecondsPerMillion: number;
  clusterRecordsPerSec: number;
  clusterCpuSecondsPerMillion: number;
  /** Connections carrying data: the mesh's links, the cluster's per-channel sockets. */
  meshLinks: number;
  clusterSockets: number;
}

const member = fileURLToPath(new URL('./mesh-member.ts', import.meta.url));

type MemberRuns = { runMs: number; cpuSeconds: number; links: number }[];

/** Run one member; resolves with its last JSON line. */
function runMember(args: string[]): Promise<MemberRuns> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', member, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as MemberRuns)
        : reject(new Error(`mesh member exited ${code}:\n${err}`)),
    );
  });
}

/** `runs` measured runs (after one warm-up) of a 2-member mesh, both members living through all of them. */
async function meshRuns(
  query: string,
  parallelism: number,
  events: number,
  runs: number,
): Promise<{ recordsPerSec: number; cpuSecondsPerMillion: number; links: number }[]> {
  const [control, a, b] = await freePorts(3);
  const common = [query, String(parallelism), String(events), String(runs)];
  const [l, j] = await Promise.all([
    runMember([...common, 'lead', '2', `127.0.0.1:${control}`, `127.0.0.1:${a}`]),
    runMember([...common, 'join', `127.0.0.1:${control}`, `127.0.0.1:${b}`]),
  ]);
  return l.map((r, i) => ({
    recordsPerSec: events / (r.runMs / 1000),
    cpuSecondsPerMillion: (r.cpuSeconds + j[i]!.cpuSeconds) / (events / 1e6),
    links: r.links,
  }));
}

export async function runMeshBench(options: { quick?: boolean } = {}): Promise<MeshBench[]> {
  const events = options.quick ? 1_000_000 : 4_000_000;
  const runs = options.quick ? 1 : 3;
  const parallelism = 2;
  const out: MeshBench[] = [];
  for (const query of ['q5', 'q12']) {
    const mesh = await meshRuns(query, parallelism, events, runs);
    const file = queryFile(query);
    const cluster = await startBenchCluster(file, parallelism);
    let c;
    try {
      c = await runOn(cluster, file, parallelism, { events: String(events), sink: 'blackhole' }, events, runs);
    } finally {
      await cluster.stop();
    }
    out.push({
      query,
      parallelism,
      events,
      runs,
      meshRecordsPerSec: median(mesh.map((m) => m.recordsPerSec)),
      meshCpuSecondsPerMillion: median(mesh.map((m) => m.cpuSecondsPerMillion)),
      clusterRecordsPerSec: c.recordsPerSec,
      clusterCpuSecondsPerMillion: c.cpuSecondsPerMillion,
      meshLinks: mesh[0]!.links,
      clusterSockets: c.edges.socket,
    });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runMeshBench({ quick: process.argv.includes('--quick') })) + '\n');
}
