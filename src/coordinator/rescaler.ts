/**
 * Rescale by drain and replan (docs/design/016-rescale.md): check the targets, plan the job again at
 * them (its module's build function, in a plan thread), take a checkpoint, stop the job and deploy it
 * from that checkpoint at the new parallelism. No restart budget is spent. Refusals come before
 * anything stops, each naming what is wrong and what would be accepted.
 */
import { defaultCacheDir, planInThread } from '../loader/index.js';
import type { Logger } from '../log/index.js';
import {
  createPhysicalPlan,
  keyedAboveKeyGroups,
  MAX_PARALLELISM,
  slotNeed,
  type JobGraphSpec,
  type PhysicalPlan,
} from '../plan/index.js';
import type { Clock } from '../util/index.js';
import { isTerminal } from './job-lifecycle.js';
import type { CachedModule, JobState, RescaleMode, StagedRescale } from './job-state.js';
import { cutoverTasks, type HotCutover, type RescaleTarget } from './hot-rescale.js';
import { checkRestore, identityOf } from './restore-gate.js';

/** What a rescale asks for: the job's parallelism (0: keep it) and operators' own, by id (uid). */
export interface RescaleRequest {
  parallelism: number;
  operators: Record<string, number>;
  /** 'hot': replace only the tasks that change, or refuse; 'replan': stop all, deploy all; 'auto' (default): hot when it can. */
  mode?: RescaleModeRequest;
}

export type RescaleModeRequest = 'auto' | 'hot' | 'replan';
export const RESCALE_MODES: readonly RescaleModeRequest[] = ['auto', 'hot', 'replan'];

export type RescaleOutcome =
  | { ok: true; message: string; changes: string[]; checkpointId: number; pauseMs: number; mode: RescaleMode }
  | { ok: false; code: RescaleRefusalCode; message: string };

/** NOT_FOUND reads as HTTP 404, STATE and NOT_ENOUGH_SLOTS as 409, the rest as 400. */
export type RescaleRefusalCode =
  | 'CLINK_ERR_NOT_FOUND'
  | 'CLINK_ERR_STATE'
  | 'CLINK_ERR_INVALID_ARGUMENT'
  | 'CLINK_ERR_PLAN'
  | 'CLINK_ERR_NOT_ENOUGH_SLOTS';

export interface RescalerDeps {
  clock: Clock;
  log: Logger;
  /** Build the job's module again at `parallelism`, with these operators' own (a plan thread). */
  plan: (
    module: CachedModule,
    parallelism: number,
    params: Record<string, string>,
    parallelismOf: Record<string, number>,
  ) => Promise<JobGraphSpec>;
  /** Slots of the live workers, in all. */
  totalSlots: () => number;
  slotSharing: boolean;
  /** Persist the staged plan for a successor (HA). */
  persist?: (job: JobState, staged: Omit<StagedRescale, 'checkpointId'>) => Promise<void>;
  /** Hot rescales. */
  cutover: HotCutover;
  /** How long the rescaled job may take to run again before the request is answered anyway. */
  settleTimeoutMs: number;
}

/** A rescale's plan: the job's module built again at the new parallelism, in a plan thread (RescalerDeps.plan). */
export async function planRescale(
  module: CachedModule,
  parallelism: number,
  params: Record<string, string>,
  parallelismOf: Record<string, number>,
): Promise<JobGraphSpec> {
  const planned = await planInThread({
    module: { code: module.bytes, sourceMap: module.sourceMap },
    parallelism,
    params,
    parallelismOf,
    cacheDir: defaultCacheDir(),
    label: `job module ${module.sha256.slice(0, 12)}`,
  });
  return planned.spec;
}

/** Targets that cannot work whatever the plan: unknown operators, values below 1, operators fixed at 1. */
export function targetRefusal(spec: JobGraphSpec, r: RescaleRequest): string | undefined {
  if (!Number.isInteger(r.parallelism) || r.parallelism < 0)
    return `parallelism must be a whole number >= 1, got ${r.parallelism}`;
  if (r.mode !== undefined && !RESCALE_MODES.includes(r.mode))
    return `mode must be one of ${RESCALE_MODES.join(', ')}, got '${String(r.mode)}'`;
  if (r.parallelism === 0 && Object.keys(r.operators).length === 0)
    return 'nothing to rescale: give --parallelism or --operator <uid>=<n>';
  const ids = new Map(spec.operators.map((o) => [o.id, o]));
  const unknown = Object.keys(r.operators).filter((id) => !ids.has(id));
  if (unknown.length > 0)
    return `job '${spec.job.name}' has no operator ${unknown.map((u) => `'${u}'`).join(', ')}; its operators are ${[...ids.keys()].join(', ')}`;
  for (const [id, n] of Object.entries(r.operators)) {
    const op = ids.get(id)!;
    if (!Number.isInteger(n) || n < 1) return `operator '${id}': parallelism must be a whole number >= 1, got ${n}`;
    if (op.options.nonParallel === true && n !== 1)
      return `operator '${id}' runs at parallelism 1 only; reachable values: 1`;
    if (op.keyed && n > MAX_PARALLELISM)
      return `operator '${id}' is keyed: its parallelism cannot exceed ${MAX_PARALLELISM} (the key groups); reachable values: 1..${MAX_PARALLELISM}`;
  }
  return undefined;
}

/** Each operator target extended to every operator of the task (chain) that holds it. */
export function chainTargets(plan: PhysicalPlan, operators: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [id, n] of Object.entries(operators)) {
    const task = plan.tasks.find((t) => t.operators.some((o) => o.id === id));
    for (const o of task?.operators ?? []) out[o.id] = n;
  }
  return out;
}

/** `<task> <from> -> <to>` for each task of `next` whose parallelism differs from `now`'s. */
export function parallelismChanges(now: PhysicalPlan, next: PhysicalPlan): string[] {
  const before = new Map(now.tasks.map((t) => [t.id, t.parallelism]));
  return next.tasks
    .filter((t) => before.get(t.id) !== t.parallelism)
    .map((t) => `${t.id} ${before.get(t.id) ?? 0} -> ${t.parallelism}`);
}

export class Rescaler {
  private readonly inFlight = new Set<JobState>();

  constructor(private readonly deps: RescalerDeps) {}

  async rescale(target: RescaleTarget, request: RescaleRequest, cause: string): Promise<RescaleOutcome> {
    const job = target.job;
    const refuse = (code: RescaleRefusalCode, message: string): RescaleOutcome => ({
      ok: false,
      code,
      message: `rescale of job ${job.id} refused: ${message}`,
    });
    if (job.state !== 'RUNNING') return refuse('CLINK_ERR_STATE', `it is ${job.state}, not RUNNING`);
    if (this.inFlight.has(job)) return refuse('CLINK_ERR_STATE', 'a rescale of it is in progress');
    if (!job.checkpoint.checkpointDir)
      return refuse(
        'CLINK_ERR_PLAN',
        'a rescale restores from a checkpoint, and it has no checkpoint directory; submit it with --checkpoint-dir',
      );
    const bad = targetRefusal(job.spec, request);
    if (bad) return refuse('CLINK_ERR_INVALID_ARGUMENT', bad);
    this.inFlight.add(job);
    try {
      const requestedAt = this.deps.clock.now();
      const before = { rescales: job.rescales.length, restarts: job.restarts.length };
      // A target names an operator; it applies to the chain (task) that holds it, which would otherwise split.
      const parallelismOf = { ...job.parallelismOf, ...chainTargets(job.plan, request.operators) };
      const build = request.parallelism || job.buildParallelism || job.spec.defaultParallelism;
      let spec: JobGraphSpec;
      let plan: PhysicalPlan;
      try {
        spec = await this.deps.plan(job.module, build, JSON.parse(job.params) as Record<string, string>, parallelismOf);
        // The guarantee asked for at submit (--guarantee may override defineJob's) stays the job's.
        spec = {
          ...spec,
          job: { ...spec.job, ...(job.spec.job.guarantee ? { guarantee: job.spec.job.guarantee } : {}) },
        };
        const above = keyedAboveKeyGroups(spec);
        if (above.length > 0)
          return refuse('CLINK_ERR_INVALID_ARGUMENT', `${above.join('; ')} (reachable values: 1..${MAX_PARALLELISM})`);
        plan = createPhysicalPlan(spec);
        // The restore gate, before anything stops: a task whose connector cannot be rescaled, or whose chain the new parallelism breaks, is named.
        checkRestore(
          { checkpointId: 0, subtasks: [], identity: identityOf(job.plan, job.name) },
          plan,
          job.name,
          false,
        );
      } catch (err) {
        return refuse(
          'CLINK_ERR_PLAN',
          (err as Error).message.replace(/^restore (refused|layout differs): checkpoint 0 /, ''),
        );
      }
      const changes = parallelismChanges(job.plan, plan);
      if (changes.length === 0) return refuse('CLINK_ERR_INVALID_ARGUMENT', 'it already runs at that parallelism');
      const need = slotNeed(plan, this.deps.slotSharing).slots;
      const have = this.deps.totalSlots();
      if (need > have)
        return refuse(
          'CLINK_ERR_NOT_ENOUGH_SLOTS',
          `at the new parallelism it needs ${need} slots, and the cluster's workers have ${have}; add workers or ask for less`,
        );
      const staging = {
        spec,
        plan,
        specJson: JSON.stringify(spec),
        buildParallelism: build,
        parallelismOf,
        changes,
        requestedAt,
        cause,
      };
      const persist = (): Promise<void> | undefined =>
        this.deps
          .persist?.(job, staging)
          .catch((err: unknown) =>
            this.deps.log.warn(
              { err, jobId: job.id },
              `could not persist the rescaled plan of job ${job.id}: ${(err as Error).message}`,
            ),
          );
      const mode = request.mode ?? 'auto';
      const tasks = mode === 'replan' ? 'drain and replan was asked for' : cutoverTasks(job.plan, plan);
      if (typeof tasks === 'string' && mode === 'hot')
        return refuse(
          'CLINK_ERR_INVALID_ARGUMENT',
          `it cannot be rescaled in place: ${tasks}; rescale it with --mode replan`,
        );
      let checkpointId = 0;
      if (typeof tasks !== 'string') {
        const hot = await this.deps.cutover.run(target, staging, tasks);
        if (hot.ok) {
          await persist();
          const message = `job ${job.id} rescaled in place (${changes.join(', ')}) from checkpoint ${hot.checkpointId}; the tasks beside them paused ${hot.pauseMs} ms`;
          this.deps.log.info({ jobId: job.id, checkpointId: hot.checkpointId, pauseMs: hot.pauseMs }, message);
          return {
            ok: true,
            message,
            changes,
            checkpointId: hot.checkpointId,
            pauseMs: hot.pauseMs,
            mode: 'hot-cutover',
          };
        }
        if (job.state !== 'RUNNING' && job.state !== 'RESCALING') {
          const restart = job.restarts.length > before.restarts ? job.restarts.at(-1) : undefined;
          return refuse(
            'CLINK_ERR_STATE',
            `its hot rescale was cut short (${hot.message})${restart ? `, and a restart took over (${restart.cause})` : ''}; it is ${job.state} now`,
          );
        }
        // Given up before its checkpoint: drain and replan from a new one; after it, it is being replanned from it.
        checkpointId = hot.checkpointId;
      }
      if (checkpointId === 0) {
        const taken = await job.checkpointing.checkpointNow(`the rescale of job ${job.id}`);
        if (!taken.ok) return refuse('CLINK_ERR_STATE', taken.message);
        if (job.state !== 'RUNNING')
          return refuse(
            'CLINK_ERR_STATE',
            `it is ${job.state} since its checkpoint ${taken.checkpointId}, not RUNNING`,
          );
        checkpointId = taken.checkpointId;
        target.rescale({ ...staging, checkpointId });
      }
      await persist();
      const settled = await this.settled(job, before);
      const r = job.rescales.at(-1);
      if (!settled || !r || r.runningAt === undefined) {
        const restart = job.restarts.length > before.restarts ? job.restarts.at(-1) : undefined;
        if (restart)
          return refuse(
            'CLINK_ERR_STATE',
            `it was stopped at checkpoint ${checkpointId}, and a restart took over (${restart.cause}); it is ${job.state} now`,
          );
        return refuse(
          'CLINK_ERR_STATE',
          `it was stopped at checkpoint ${checkpointId} and is ${job.state} now${job.error ? `: ${job.error}` : ''}`,
        );
      }
      const pauseMs = r.runningAt - r.at;
      const message = `job ${job.id} rescaled (${changes.join(', ')}) from checkpoint ${checkpointId}; it paused ${pauseMs} ms`;
      this.deps.log.info({ jobId: job.id, checkpointId, pauseMs }, message);
      return { ok: true, message, changes, checkpointId, pauseMs, mode: 'drain-and-replan' };
    } finally {
      this.inFlight.delete(job);
    }
  }

  /**
   * Resolves true once the job runs again after its rescale, false when it ended, a restart took over
   * (a worker lost while it redeployed: the job runs again as the restart left it), or the wait ran out.
   */
  private settled(job: JobState, before: { rescales: number; restarts: number }): Promise<boolean> {
    const check = (): boolean | undefined => {
      if (isTerminal(job.state)) return false;
      if (job.state !== 'RUNNING') return undefined;
      if (job.rescales.length > before.rescales && job.rescales.at(-1)?.runningAt !== undefined) return true;
      if (job.restarts.length > before.restarts) return false;
      return undefined;
    };
    return new Promise((resolve) => {
      const deadline = this.deps.clock.now() + this.deps.settleTimeoutMs;
      const stop = this.deps.clock.every(20, () => {
        const r = check() ?? (this.deps.clock.now() >= deadline ? false : undefined);
        if (r === undefined) return;
        stop();
        resolve(r);
      });
    });
  }
}
