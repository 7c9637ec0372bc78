/** `clink submit`, `clink jobs`, `clink cancel`: a client of a running coordinator. */
import { NO_CHECKPOINTS, type CheckpointSettings, type JobOutcome } from '../client/index.js';
import { determinismFindings, jobFindings, refuseOnErrors } from '../lint/index.js';
import { gateJob } from './job-checks.js';
import { ClinkError } from '../errors.js';
import { prepareSubmission, typecheckJob } from '../loader/index.js';
import { exitOnInterrupt } from './interrupt.js';
import { followProgress, ProgressDisplay, type JobProgressSample } from './progress.js';
import { formatTable } from './table.js';

export type { Endpoint, CoordinatorTarget } from './endpoint.js';
import type { CoordinatorTarget } from './endpoint.js';
import { connectToLeader, followJob, followsLeader } from './leader.js';

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
  return new ClinkError(
    outcome.state === 'CANCELED' ? 'CLINK_ERR_CANCELLED' : 'CLINK_ERR_JOB_FAILED',
    outcome.state === 'CANCELED'
      ? `job ${outcome.jobId} was cancelled: ${outcome.error}`
      : `job failed: ${outcome.error}`,
  );
}

export async function submitCommand(
  jobPath: string,
  o: {
    coordinator: CoordinatorTarget;
    parallelism?: number;
    params: Record<string, string>;
    name?: string;
    wait: boolean;
    /** With `wait`: live progress on standard error. @default true */
    progress?: boolean;
    output: 'table' | 'json';
    maxRows: number;
    checkpoint?: Partial<CheckpointSettings>;
    typecheck?: boolean;
    /** Overrides the job's own (defineJob's guarantee). */
    guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
    /** Autoscaler bounds (--autoscale). */
    autoscale?: { min: number; max: number };
  },
): Promise<void> {
  if (o.typecheck !== false) await typecheckJob(jobPath);
  // The lint's job checks run here, before anything ships (the coordinator checks the plan again).
  const { compiled, spec } = await prepareSubmission(jobPath, {
    parallelism: o.parallelism ?? 1,
    params: o.params,
    verifyBuild: (built, rebuild) => refuseOnErrors(determinismFindings(built, rebuild)),
  });
  if (o.guarantee) spec.job.guarantee = o.guarantee;
  gateJob(
    jobFindings(spec, {
      settings: { ...NO_CHECKPOINTS, ...o.checkpoint },
      ...(o.autoscale ? { autoscale: o.autoscale } : {}),
    }),
  );
  const client = await connectToLeader(o.coordinator);
  try {
    const { jobId } = await client.submit({
      module: compiled,
      spec,
      params: o.params,
      buildParallelism: o.parallelism ?? 1,
      ...(o.name ? { name: o.name } : {}),
      ...(o.checkpoint ? { checkpoint: o.checkpoint } : {}),
      ...(o.autoscale ? { autoscale: o.autoscale } : {}),
    });
    // With --output json, standard output is one JSON document and nothing else.
    if (o.output === 'json' && !o.wait) process.stdout.write(JSON.stringify({ jobId }) + '\n');
    if (o.output === 'table') process.stdout.write(`${jobId}\n`);
    if (!o.wait) return;
    const display =
      o.progress !== false
        ? new ProgressDisplay(process.stderr, o.name ?? spec.job.name, { tty: process.stderr.isTTY === true })
        : undefined;
    const sample = async (): Promise<JobProgressSample | undefined> =>
      (await client.listJobs(true)).find((j) => j.jobId === jobId);
    const stopProgress = display ? followProgress(display, sample, 1_000) : () => undefined;
    // Ctrl-C stops waiting, not the job: it runs on the cluster.
    exitOnInterrupt(`stopped waiting; job ${jobId} runs on (clink cancel ${jobId} stops it)`, () =>
      display?.breakLine(),
    );
    let outcome = await client.waitForCompletion(jobId).finally(stopProgress);
    display?.end(outcome.state === 'UNKNOWN' ? undefined : await sample().catch(() => undefined));
    // The coordinator was lost: with HA, its successor has the job.
    if (outcome.state === 'UNKNOWN' && followsLeader(o.coordinator))
      outcome = await followJob(o.coordinator, jobId, outcome.error);
    if (!outcome.ok) throw jobFailed(outcome);
    if (o.output === 'json')
      process.stdout.write(
        JSON.stringify({ jobId, state: outcome.state, durationMs: outcome.durationMs, collected: outcome.collected }) +
          '\n',
      );
    else printCollected(outcome.collected, o.output, o.maxRows);
    process.stderr.write(`job ${jobId} (${spec.job.name}) finished in ${(outcome.durationMs / 1000).toFixed(2)} s\n`);
  } finally {
    client.close();
  }
}

export async function jobsCommand(o: { coordinator: CoordinatorTarget; json: boolean }): Promise<void> {
  const client = await connectToLeader(o.coordinator);
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
        jobs.map((j) => ({
          id: j.jobId,
          name: j.name,
          state: j.state,
          parallelism: j.parallelism,
          'records in': j.sourceRecords,
          'records out': j.sinkRecords,
          error: j.error.split('\n')[0],
        })),
        0,
        { sort: false },
      ) + '\n',
    );
  } finally {
    client.close();
  }
}

export async function cancelCommand(jobId: string, o: { coordinator: CoordinatorTarget }): Promise<void> {
  const client = await connectToLeader(o.coordinator);
  try {
    const r = await client.cancel(jobId);
    if (!r.ok) throw new ClinkError('CLINK_ERR_NOT_FOUND', r.message);
    process.stdout.write(`${r.message}\n`);
  } finally {
    client.close();
  }
}

/** `clink rescale`: in place or by drain and replan; prints what changed and how long the job paused. */
export async function rescaleCommand(
  jobId: string,
  o: {
    coordinator: CoordinatorTarget;
    parallelism: number;
    operators: Record<string, number>;
    mode: 'auto' | 'hot' | 'replan';
  },
): Promise<void> {
  const client = await connectToLeader(o.coordinator);
  try {
    const r = await client.rescale(jobId, o.parallelism, o.operators, undefined, o.mode);
    if (!r.ok) throw new ClinkError('CLINK_ERR_JOB_FAILED', r.message);
    process.stdout.write(`${r.message}\n`);
  } finally {
    client.close();
  }
}

export async function savepointCommand(
  jobId: string,
  o: { coordinator: CoordinatorTarget; dir: string; cancel: boolean },
): Promise<void> {
  const client = await connectToLeader(o.coordinator);
  try {
    const r = await client.savepoint(jobId, o.dir, o.cancel);
    if (!r.ok) throw new ClinkError('CLINK_ERR_JOB_FAILED', r.message);
    process.stdout.write(`${r.path}\n`);
  } finally {
    client.close();
  }
}
