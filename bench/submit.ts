/**
 * Submit latency: the wall time of `clink submit` (the built CLI), from process start to the job id it
 * prints once the SubmitJobAck arrives, for a first and a repeated submit of a mid-sized job module
 * against a coordinator on loopback.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '../src/embedded/index.js';
import { ClusterClient } from '../src/client/index.js';
import { compileJobModule, prepareSubmission } from '../src/loader/index.js';
import { createLogger } from '../src/log/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));

export interface SubmitLatency {
  moduleBytes: number;
  /** `clink submit` wall time, process start to the printed job id. */
  cliFirstMs: number;
  cliRepeatMedianMs: number;
  /** In an already running client: prepare (cached) + connect + submit until the SubmitJobAck. */
  inProcessFirstMs: number;
  inProcessRepeatMedianMs: number;
}

export async function runSubmitBench(repeats = 5): Promise<SubmitLatency> {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'ignore' });
  const job = join(root, 'bench/jobs/midsize.ts');
  const compiled = await compileJobModule(job);
  const cluster = await EmbeddedCluster.start({
    workers: 1,
    slotsPerWorker: 2,
    log: createLogger({ level: 'error' }),
    cliCommand: { execPath: process.execPath, args: [join(root, 'bin/clink.js')] },
  });
  try {
    // Asynchronously: the coordinator under test runs on this process's event loop.
    const submit = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const child = spawn(
          process.execPath,
          [join(root, 'bin/clink.js'), 'submit', job, `--coordinator=127.0.0.1:${cluster.coordinator.port}`],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let err = '';
        child.stderr.on('data', (d) => (err += d));
        child.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(err))));
      });
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const cliFirstMs = await submit();
    const cli: number[] = [];
    for (let i = 0; i < repeats; i++) cli.push(await submit());
    // In process, against a fresh coordinator cache: the first submit uploads the module, repeats do not.
    const fresh = await EmbeddedCluster.start({
      workers: 0,
      slotsPerWorker: 16,
      log: createLogger({ level: 'error' }),
    });
    try {
      const inProcess: number[] = [];
      for (let i = 0; i <= repeats; i++) {
        const t0 = performance.now();
        const { compiled: module, spec } = await prepareSubmission(job, { parallelism: 1, params: {} });
        const client = await ClusterClient.connect('127.0.0.1', fresh.coordinator.port);
        await client.submit({ module, spec, params: {}, buildParallelism: 1 });
        inProcess.push(performance.now() - t0);
        client.close();
      }
      return {
        moduleBytes: compiled.code.length + compiled.sourceMap.length,
        cliFirstMs,
        cliRepeatMedianMs: median(cli),
        inProcessFirstMs: inProcess[0]!,
        inProcessRepeatMedianMs: median(inProcess.slice(1)),
      };
    } finally {
      await fresh.stop();
    }
  } finally {
    await cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await runSubmitBench(process.argv.includes('--quick') ? 3 : 5)) + '\n');
}
