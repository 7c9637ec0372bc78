/**
 * `clink run <job> --lead <n> --control <host:port> --exchange <host:port>` and `--join <host:port>
 * --exchange <host:port>`: run as a member of a mesh run (design record 017). The leader prints what
 * the job's collect() sinks gathered, as `clink run` does; every member exits 0 once the run finished,
 * 1 with the cause when it failed.
 */
import { NO_CHECKPOINTS } from '../client/index.js';
import type { LoadedJob } from '../loader/index.js';
import { createLogger } from '../log/index.js';
import { ClinkMetrics } from '../metrics/index.js';
import { runMesh, topologyShape } from '../mesh/index.js';
import type { JobGraphSpec, PhysicalPlan } from '../plan/index.js';
import { DEFAULT_BATCH_SIZE } from '../runtime/index.js';
import { printCollected } from './client.js';
import type { MeshRunFlags } from './options.js';
import type { RunCommandOptions } from './run.js';

export async function runMeshMember(
  loaded: LoadedJob,
  spec: JobGraphSpec,
  plan: PhysicalPlan,
  mesh: MeshRunFlags,
  o: RunCommandOptions & { parallelism: number },
): Promise<void> {
  // A mesh member's own lines matter to its operator (who joined, what failed): info unless told otherwise.
  const log = createLogger({ level: process.env.CLINK_LOG_LEVEL ?? 'info' });
  const started = Date.now();
  const outcome = await runMesh({
    role: mesh.role,
    exchange: mesh.exchange,
    module: loaded,
    plan,
    specJson: JSON.stringify(spec),
    shape: topologyShape(spec, loaded.sha256),
    params: o.params,
    buildParallelism: o.parallelism,
    checkpoint: { ...NO_CHECKPOINTS, ...o.checkpoint },
    restart: mesh.restart,
    timeoutMs: mesh.timeoutMs,
    heartbeatTimeoutMs: mesh.heartbeatTimeoutMs,
    batchSize: o.batchSize ?? DEFAULT_BATCH_SIZE,
    batchLingerMs: o.batchLingerMs ?? 0,
    debloatTargetMs: o.debloatTargetMs ?? 0,
    log,
    metrics: new ClinkMetrics(),
    onListening: (port) => log.info({ port }, `mesh leader: members register at port ${port}`),
    onMembers: (m) =>
      log.info(
        m,
        `mesh run attempt ${m.attempt}: member ${m.me} of ${m.members.length} (${m.members.join(', ')})${m.restoreCheckpointId > 0 ? `, resuming from checkpoint ${m.restoreCheckpointId}` : ''}`,
      ),
  });
  if ('lead' in mesh.role) printCollected(outcome.collected, o.output, o.maxRows);
  const restarts = outcome.attempts > 1 ? `, ${outcome.attempts - 1} restart${outcome.attempts > 2 ? 's' : ''}` : '';
  process.stderr.write(
    `job '${spec.job.name}' finished in ${((Date.now() - started) / 1000).toFixed(2)} s (parallelism ${spec.defaultParallelism}, mesh of ${outcome.members.length} members${restarts})\n`,
  );
}
