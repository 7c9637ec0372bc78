/**
 * Mesh mode vs a coordinator cluster (design record 017): Nexmark q5 and q12 at parallelism 2 on a
 * 2-member mesh (two processes, `runMesh`, one link) and on an embedded cluster of 2 worker processes
 * (a connection per channel), same events, back to back. Records/s is events over the run's time (the
 * mesh: MeshStart to the end; the cluster: submit to completion, after one warm-up run); CPU-s per
 * million events is every member's, or every worker's. Mesh members are fresh processes each run (a
 * mesh run is one process per run): their JIT is cold, the cluster's warm.
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

/** Run one member; resolves with its last JSON line. */
function runMember(args: string[], onControl?: (port: number) => void): Promise<{ runMs: number; cpuSeconds: number; links: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', member, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      const m = /control (\d+)\n/.exec(out);
      if (m && onControl) {
        onControl(Number(m[1]));
        onControl = undefined;
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`mesh member exited ${code}:\n${err}`))));
  });
}

async function meshRun(query: string, parallelism: number, events: number): Promise<{ recordsPerSec: number; cpuSecondsPerMillion: number; links: number }> {
  const [a, b] = await freePorts(2);
  let port!: (p: number) => void;
  const control = new Promise<number>((r) => (port = r));
  const common = [query, String(parallelism), String(events)];
  const leader = runMember([...common, 'lead', '2', '127.0.0.1:0', `127.0.0.1:${a}`], port);
  const joiner = runMember([...common, 'join', `127.0.0.1:${await control}`, `127.0.0.1:${b}`]);
  const [l, j] = await Promise.all([leader, joiner]);
  return { recordsPerSec: events / (l.runMs / 1000), cpuSecondsPerMillion: (l.cpuSeconds + j.cpuSeconds) / (events / 1e6), links: l.links };
}

export async function runMeshBench(options: { quick?: boolean } = {}): Promise<MeshBench[]> {
  const events = options.quick ? 1_000_000 : 4_000_000;
  const runs = options.quick ? 1 : 3;
  const parallelism = 2;
  const out: MeshBench[] = [];
  for (const query of ['q5', 'q12']) {
    const mesh = [];
    for (let r = 0; r < runs; r++) mesh.push(await meshRun(query, parallelism, events));
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
