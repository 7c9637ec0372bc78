/**
 * `clink run <job>`: compile a job module and run it on an embedded cluster (a coordinator in this
 * process, workers in local processes), the same path a cluster run takes.
 */
import { availableParallelism } from 'node:os';
import { NO_CHECKPOINTS, type CheckpointSettings } from '../client/index.js';
import { gateJob } from './job-checks.js';
import { jobFindings } from '../lint/index.js';
import { toSummary } from '../coordinator/index.js';
import { EmbeddedCluster } from '../embedded/index.js';
import { loadJobModule, typecheckJob } from '../loader/index.js';
import { createLogger } from '../log/index.js';
import { createPhysicalPlan, slotNeed } from '../plan/index.js';
import { buildJob } from '../sdk/index.js';
import { jobFailed, printCollected } from './client.js';
import { InterruptedError, onInterrupt } from './interrupt.js';
import { followProgress, ProgressDisplay, type JobProgressSample } from './progress.js';
import { DEFAULT_BATCH_SIZE } from '../runtime/index.js';
import { runMeshMember } from './mesh-run.js';
import type { MeshRunFlags } from './options.js';

export interface RunCommandOptions {
  /** Overrides the job's own (defineJob's guarantee). */
  guarantee?: 'at-most-once' | 'at-least-once' | 'exactly-once';
  parallelism?: number;
  params: Record<string, string>;
  progress: boolean;
  output: 'table' | 'json';
  maxRows: number;
  /** Worker processes; 0 runs everything in this process. @default one per core */
  workers?: number;
  batchSize?: number;
  batchLingerMs?: number;
  debloatTargetMs?: number;
  /** Checkpointing and restore (none by default). */
  checkpoint?: Partial<CheckpointSettings>;
  /** @default true */
  slotSharing?: boolean;
  /** Type-check the job first, when TypeScript is installed. @default true */
  typecheck?: boolean;
  /** Run as a member of a mesh run (--lead / --join) instead of on a local cluster. */
  mesh?: MeshRunFlags;
}

export async function runCommand(jobPath: string, o: RunCommandOptions): Promise<void> {
  if (o.typecheck !== false) await typecheckJob(jobPath);
  const loaded = await loadJobModule(jobPath);
  const parallelism = o.parallelism ?? 1;
  const build = (): ReturnType<typeof buildJob> => {
    const b = buildJob(loaded.job, { parallelism, params: o.params });
    if (o.guarantee) b.spec.job.guarantee = o.guarantee;
    return b;
  };
  const built = build();
  const slotSharing = o.slotSharing ?? true;
  // The lint's job checks, as clink submit applies them; the local coordinator's default retries are 0.
  gateJob(
    jobFindings(
      built.spec,
      { settings: { ...NO_CHECKPOINTS, ...o.checkpoint }, coordinatorRegionRetries: 0, slotSharing },
      () => build().spec,
    ),
  );
  const plan = createPhysicalPlan(built.spec);
  if (o.mesh) return runMeshMember(loaded, built.spec, plan, o.mesh, { ...o, parallelism });
  const { slots } = slotNeed(plan, slotSharing);
  const workers = Math.min(o.workers ?? availableParallelism(), slots);
  const slotsPerWorker = workers === 0 ? slots : Math.ceil(slots / workers);
  const log = createLogger({ level: process.env.CLINK_LOG_LEVEL ?? 'error' });
  // Elapsed time counts from before the local cluster starts, as the user waits for it too.
  const display = o.progress
    ? new ProgressDisplay(process.stderr, built.spec.job.name, { tty: process.stderr.isTTY === true })
    : undefined;
  const cluster = await EmbeddedCluster.start({
    workers,
    slotsPerWorker,
    slotSharing,
    log,
    batchSize: o.batchSize ?? DEFAULT_BATCH_SIZE,
    batchLingerMs: o.batchLingerMs ?? 0,
    debloatTargetMs: o.debloatTargetMs ?? 0,
  });
  let stopProgress: (() => void) | undefined;
  let interrupted = false;
  let undoInterrupt: (() => void) | undefined;
  try {
    const client = await cluster.client();
    const { jobId } = await client.submit({
      module: loaded,
      spec: built.spec,
      params: o.params,
      buildParallelism: parallelism,
      ...(o.checkpoint ? { checkpoint: o.checkpoint } : {}),
    });
    // The job as ListJobs shows it, which is what submit --wait samples too.
    const sample = (): JobProgressSample | undefined => {
      const v = cluster.coordinator.job(jobId);
      return v && toSummary(v);
    };
    if (display) stopProgress = followProgress(display, sample, process.stderr.isTTY ? 250 : 1_000);
    // Ctrl-C cancels the job and stops the local cluster cleanly (a second one exits at once).
    undoInterrupt = onInterrupt(() => {
      interrupted = true;
      display?.breakLine();
      void client.cancel(jobId).catch(() => undefined);
    });
    const outcome = await client.waitForCompletion(jobId);
    stopProgress?.();
    display?.end(sample());
    if (interrupted && outcome.state === 'CANCELED') throw new InterruptedError('the job was cancelled');
    if (!outcome.ok) throw jobFailed(outcome);
    printCollected(outcome.collected, o.output, o.maxRows);
    const where = workers === 0 ? 'in this process' : `on ${workers} local worker${workers > 1 ? 's' : ''}`;
    process.stderr.write(
      `job '${built.spec.job.name}' finished in ${(outcome.durationMs / 1000).toFixed(2)} s (parallelism ${built.spec.defaultParallelism}, ${where})\n`,
    );
  } finally {
    stopProgress?.();
    undoInterrupt?.();
    await cluster.stop();
  }
}
