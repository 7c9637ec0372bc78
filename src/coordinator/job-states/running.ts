/**
 * DEPLOYING to RUNNING: every subtask of a deploy (the whole job, a retried region, a hot rescale's new
 * subtasks) starts together once all of them listen. The job's first such group makes it RUNNING.
 */
import type { SubtaskState } from '../job-state.js';
import type { JobOps } from './job-ops.js';

/** Every subtask of `group` (one deploy attempt) listens: they are told their peers, and the job may run. */
export function groupListening(ops: JobOps, group: SubtaskState[], attempt: number): void {
  const { job, services } = ops;
  const workers = services.deployer.connect(job, group, attempt);
  // A hot rescale's new subtasks (a deploy of a job that runs); a restart's are the job's, below.
  if (job.cutover && job.state === 'RUNNING') {
    job.cutover.connected?.();
    return;
  }
  if (job.state === 'RUNNING') {
    services.log.info(
      { jobId: job.id, attempt },
      `job ${job.id} (${job.name}): ${group.length} retried subtasks running again as attempt ${attempt}`,
    );
    return;
  }
  enterRunning(ops);
  services.log.info(
    { jobId: job.id },
    `job ${job.id} (${job.name}) running: ${job.subtasks.length} subtasks on ${workers} workers`,
  );
}

/** Entering RUNNING: when it ran, and (after a rescale) when the rescaled job ran again. */
function enterRunning(ops: JobOps): void {
  const { job } = ops;
  ops.moveTo('RUNNING');
  job.runningAt = ops.services.clock.now();
  const rescale = job.rescales.at(-1);
  if (rescale && rescale.attempt === job.attempt && rescale.runningAt === undefined) rescale.runningAt = job.runningAt;
}
