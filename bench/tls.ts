/**
 * The cost of TLS: Nexmark q5 (a shuffle by auction into sliding windows) on an embedded cluster of 2
 * worker processes at parallelism 2, plain and then with mTLS on the control plane and every data
 * connection (certificates made for the run, EC P-256, TLS 1.3). Same events, same runs, back to back.
 */
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { makeCerts } from '../test/harness/certs.js';
import { runOn, startBenchCluster } from './dataplane.js';
import { queryFile } from './nexmark.js';

export interface TlsBench {
  query: string;
  parallelism: number;
  events: number;
  runs: number;
  plainRecordsPerSec: number;
  tlsRecordsPerSec: number;
  plainCpuSecondsPerMillion: number;
  tlsCpuSecondsPerMillion: number;
  channels: string;
}

export async function runTlsBench(options: { quick?: boolean } = {}): Promise<TlsBench> {
  const query = 'q5';
  const parallelism = 2;
  const events = options.quick ? 2_000_000 : 8_000_000;
  const runs = options.quick ? 1 : 3;
  const file = queryFile(query);
  const certs = await makeCerts({ node: { dns: ['localhost'], ips: ['127.0.0.1'] } });
  const params = { events: String(events), sink: 'blackhole' };
  try {
    const measure = async (tls: boolean) => {
      const cluster = await startBenchCluster(
        file,
        parallelism,
        tls ? { tls: { ca: certs.ca, cert: certs.leaf.node!.cert, key: certs.leaf.node!.key } } : {},
      );
      try {
        return await runOn(cluster, file, parallelism, params, events, runs);
      } finally {
        await cluster.stop();
      }
    };
    const plain = await measure(false);
    const secured = await measure(true);
    return {
      query,
      parallelism,
      events,
      runs,
      plainRecordsPerSec: plain.recordsPerSec,
      tlsRecordsPerSec: secured.recordsPerSec,
      plainCpuSecondsPerMillion: plain.cpuSecondsPerMillion,
      tlsCpuSecondsPerMillion: secured.cpuSecondsPerMillion,
      channels: `local=${secured.edges.local} socket=${secured.edges.socket}`,
    };
  } finally {
    await rm(certs.dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runTlsBench({ quick: process.argv.includes('--quick') })) + '\n');
}
