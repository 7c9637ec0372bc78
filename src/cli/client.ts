/** `clink submit`, `clink jobs`, `clink cancel`: a client of a running coordinator. */
import { InvalidArgumentError } from 'commander';
import { ClusterClient, type JobOutcome } from '../client/index.js';
import { ClinkError } from '../errors.js';
import { loadJobModule } from '../loader/index.js';
import { createPhysicalPlan } from '../plan/index.js';
import { buildJob } from '../sdk/index.js';
import { formatTable } from './table.js';

export function parseCoordinator(v: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port > 0 && port < 65536)) throw new InvalidArgumentError(`expected host:port, got '${v}'`);
  return { host: m[1]!, port };
}

export interface Endpoint {
  host: string;
  port: number;
}

/** Print a finished job's collected results as tables, or as one JSON line. */
export function printCollected(collected: Record<string, unknown[]>, output: 'table' | 'json', maxRows: number): void {
  const names = Object.keys(collected);
  if (names.length === 0) return;
  if (output === 'json') {
    process.stdout.write(JSON.stringify(collected) + '\n');
    return;
  }
  for (const name of names) {
    const rows = collected[name]!;
    process.stdout.write(`\n${name} (${rows.length} rows)\n${formatTable(rows, maxRows)}\n`);
  }
}

export function jobFailed(outcome: JobOutcome): ClinkError {
  return new ClinkError(outcome.state === 'CANCELED' ? 'CLINK_ERR_CANCELLED' : 'CLINK_ERR_JOB_FAILED', outcome.state === 'CANCELED' ? `job ${outcome.jobId} was cancelled: ${outcome.error}` : `job failed: ${outcome.error}`);
}

export async function submitCommand(
  jobPath: string,
  o: { coordinator: Endpoint; parallelism?: number; params: Record<string, string>; name?: string; wait: boolean; output: 'table' | 'json'; maxRows: number },
): Promise<void> {
  const loaded = await loadJobModule(jobPath);
  const built = buildJob(loaded.job, { parallelism: o.parallelism ?? 1, params: o.params });
  createPhysicalPlan(built.spec);
  const client = await ClusterClient.connect(o.coordinator.host, o.coordinator.port);
  try {
    const { jobId } = await client.submit({ module: loaded, spec: built.spec, params: o.params, buildParallelism: o.parallelism ?? 1, ...(o.name ? { name: o.name } : {}) });
    process.stdout.write(`${jobId}\n`);
    if (!o.wait) return;
    const outcome = await client.waitForCompletion(jobId);
    if (!outcome.ok) throw jobFailed(outcome);
    printCollected(outcome.collected, o.output, o.maxRows);
    process.stderr.write(`job ${jobId} (${built.spec.job.name}) finished in ${(outcome.durationMs / 1000).toFixed(2)} s\n`);
  } finally {
    client.close();
  }
}

export async function jobsCommand(o: { coordinator: Endpoint; json: boolean }): Promise<void> {
  const client = await ClusterClient.connect(o.coordinator.host, o.coordinator.port);
  try {
    const jobs = await client.listJobs(true);
    if (o.json) {
      process.stdout.write(JSON.stringify(jobs) + '\n');
      return;
    }
    if (jobs.length === 0) {
      process.stdout.write('no jobs\n');
      return;
    }
    process.stdout.write(
      formatTable(
        jobs.map((j) => ({ id: j.jobId, name: j.name, state: j.state, parallelism: j.parallelism, 'records in': j.sourceRecords, 'records out': j.sinkRecords, error: j.error.split('\n')[0] })),
        1_000,
      ) + '\n',
    );
  } finally {
    client.close();
  }
}

export async function cancelCommand(jobId: string, o: { coordinator: Endpoint }): Promise<void> {
  const client = await ClusterClient.connect(o.coordinator.host, o.coordinator.port);
  try {
    const r = await client.cancel(jobId);
    if (!r.ok) throw new ClinkError('CLINK_ERR_NOT_FOUND', r.message);
    process.stdout.write(`${r.message}\n`);
  } finally {
    client.close();
  }
}
