/**
 * Submission: from a SubmitJob frame to a placed job ready to deploy. The SDK gate runs on the advert;
 * then the plan, the checkpoint settings and the restore gate (identity and layout) are checked before
 * any slot is waited for; then the job is placed, waiting up to --submit-wait-for-slots-ms.
 */
import { randomUUID } from 'node:crypto';
import { ClinkError, ConnectorError } from '../errors.js';
import { checkConnectors, guaranteeRefusal, jobGuarantee, unknownConnectors } from '../connectors/index.js';
import { checkSdkCompatibility } from '../loader/index.js';
import type { Logger } from '../log/index.js';
import { createPhysicalPlan, failoverRegions, slotNeed, type JobGraphSpec } from '../plan/index.js';
import type { MessageOf } from '../protocol/index.js';
import type { Clock } from '../util/index.js';
import { checkCheckpointConfig, resolveRestore, type CompletedMarker } from './checkpoint-storage.js';
import type { ClientSession } from './client-sessions.js';
import type { CoordinatorConfig } from './config.js';
import { recordRestore } from './deployer.js';
import type { CachedModule, NewJob } from './job-state.js';
import { countChannels } from './job-views.js';
import { placementSubtasks, type PlacementPlan } from './placement.js';
import { judgeFallback } from './fallback.js';
import { checkRestore } from './restore-gate.js';
import { autoscaleFindings, connectorFindings, refuseOnErrors } from '../lint/index.js';
import { newJobAutoscale } from './autoscaler.js';
import type { SlotWaiter } from './slot-waiter.js';

export interface SubmissionDeps {
  config: CoordinatorConfig;
  clock: Clock;
  log: Logger;
  slots: SlotWaiter;
  module: (sha256: string) => CachedModule | undefined;
}

/** A job placed and ready to deploy (nothing awaits between this and the deploy: its slots are free). */
export interface PlacedJob {
  job: NewJob;
  placement: PlacementPlan;
  restore: CompletedMarker | undefined;
}

/** Refuse a submit whose SDK this coordinator cannot run, before anything else is looked at. */
export function checkSubmitSdk(m: MessageOf<'SubmitJob'>): void {
  let theirs: Record<string, string> = {};
  try {
    theirs = JSON.parse(m.sdkManifest) as Record<string, string>;
  } catch {
    /* an unreadable manifest only costs the refusal its file names */
  }
  checkSdkCompatibility(
    { fingerprint: m.sdkFingerprint, version: m.sdkVersion || 'unknown' },
    `submit of ${m.jobName}`,
    theirs,
  );
}

/** A job taken over by a new leader: submitted again under its id, from its own newest checkpoint. */
export interface Resubmission {
  jobId: string;
  /** Its newest completed checkpoint, when it has one; else it resumes from what it was submitted with. */
  ownRestore: CompletedMarker | undefined;
  /** How long it may wait for slots (a takeover does not wait: a job without them is parked). */
  waitForSlotsMs: number;
  /** When it was first submitted (its duration counts from there). */
  submittedAt: number;
}

/**
 * Plan, check and place a submitted job. Throws NotEnoughSlotsError (after submitWaitForSlotsMs), a plan
 * error or a restore refusal. A resubmission keeps the job's id and its submitted restore point (for
 * restarts before a checkpoint of its own), and resumes from its own newest checkpoint when it has one.
 */
export async function placeSubmittedJob(
  m: MessageOf<'SubmitJob'>,
  client: ClientSession | undefined,
  deps: SubmissionDeps,
  resubmission?: Resubmission,
): Promise<PlacedJob> {
  const { config, clock } = deps;
  checkCheckpointConfig(m.checkpoint);
  const spec = JSON.parse(m.specJson) as JobGraphSpec;
  const autoscale = m.autoscaleMax > 0 ? { min: m.autoscaleMin, max: m.autoscaleMax } : undefined;
  if (autoscale) {
    if (autoscale.min < 1 || autoscale.min > autoscale.max)
      throw new ClinkError(
        'CLINK_ERR_INVALID_ARGUMENT',
        `--autoscale ${autoscale.min}..${autoscale.max}: expected 1 <= min <= max`,
      );
    refuseOnErrors(autoscaleFindings(autoscale, m.checkpoint.checkpointDir !== '', spec));
  }
  const plan = createPhysicalPlan(spec);
  // A connector this build does not have is refused here, not found out by a worker.
  const unknown = unknownConnectors(spec.operators);
  if (unknown.length > 0) throw new ConnectorError(unknown.join('; '));
  // Options, parallelism and replay order of the built-in connectors, as the lint checks them.
  refuseOnErrors(connectorFindings(spec, plan));
  // Their external systems, reached from here: a mistake is one line now, not restarts later. A job taken
  // over was accepted before; its systems may be in an outage the job rides out.
  if (!resubmission) {
    const unreachable = await checkConnectors(spec.operators, config.connectorCheckTimeoutMs);
    if (unreachable.length > 0) throw new ConnectorError(unreachable.join('\n'));
  }
  // The guarantee gate: a job that asks for more than its connectors and checkpointing can give is refused.
  const guarantee = jobGuarantee(
    spec.operators,
    m.checkpoint.checkpointDir !== '',
    m.checkpoint.maxRestarts >= 0 ? m.checkpoint.maxRestarts : config.maxRegionRetries,
    m.checkpoint.allowDuplicatesOnFallback,
  );
  const short = guaranteeRefusal(spec.job.guarantee, guarantee);
  if (short) throw new ConnectorError(short);
  const module = m.modules[0] && deps.module(m.modules[0].sha256);
  if (!module)
    throw new ClinkError(
      'CLINK_ERR_MODULE_MISSING',
      `SubmitJob refers to job module ${m.modules[0]?.sha256 ?? '(none)'}, which this coordinator does not hold`,
    );
  const subtasks = placementSubtasks(plan, config.slotSharing);
  const jobName = m.jobName || spec.job.name;
  // The restore gate (identity and layout) runs before any slot is waited for.
  const point = m.checkpoint.restoreFromDir
    ? await resolveRestore(m.checkpoint.restoreFromDir, m.checkpoint.restoreFromCheckpointId)
    : undefined;
  const submittedRestore = point?.marker;
  if (point) {
    // Falling back past checkpoints its transactional sinks committed is refused unless duplicates are allowed.
    const restored = point.marker.checkpointId;
    const what = `the restore of ${jobName}`;
    const line = judgeFallback({
      what,
      to: `checkpoint ${restored}`,
      restored,
      point,
      plan,
      allowed: m.checkpoint.allowDuplicatesOnFallback,
    });
    if (line) deps.log.warn({ restoredFrom: restored }, line);
  }
  const restore = resubmission?.ownRestore ?? submittedRestore;
  if (restore) checkRestore(restore, plan, jobName, m.checkpoint.allowNonRestoredState);
  const id = resubmission?.jobId ?? randomUUID().slice(0, 8);
  if (restore && m.checkpoint.checkpointDir) await recordRestore(m.checkpoint.checkpointDir, id, restore, config.epoch);
  const waitMs = resubmission?.waitForSlotsMs ?? config.submitWaitForSlotsMs;
  const placement = await deps.slots.place(id, subtasks, waitMs, { detail: slotNeed(plan, config.slotSharing).detail });
  const regions = failoverRegions(plan);
  const job: NewJob = {
    id,
    name: jobName,
    spec,
    plan,
    specJson: m.specJson,
    module,
    params: m.params,
    buildParallelism: m.buildParallelism,
    state: 'DEPLOYING',
    startedAt: resubmission?.submittedAt ?? clock.now(),
    subtasks: [],
    ...(client ? { client } : {}),
    collectedBytes: 0,
    progress: new Map(),
    subtaskProgress: new Map(),
    edges: countChannels(plan, placement),
    // A job that leaves its state backend to the cluster gets the coordinator's, for good.
    checkpoint:
      m.checkpoint.stateBackendType === 'default'
        ? { ...m.checkpoint, stateBackendType: config.defaultStateBackendType }
        : m.checkpoint,
    ...(submittedRestore ? { submittedRestore } : {}),
    attempt: 0,
    restarts: [],
    rescales: [],
    parallelismOf: {},
    ...(autoscale
      ? {
          autoscale: newJobAutoscale(
            autoscale,
            {
              sustainMs: config.autoscaleSustainMs,
              cooldownMs: config.autoscaleCooldownMs,
              maxChangesPerHour: config.autoscaleMaxChangesPerHour,
              lagHigh: config.autoscaleLagRecords,
            },
            clock.now(),
          ),
        }
      : {}),
    restartsSpent: 0,
    regions,
    regionOf: new Map(regions.flatMap((keys, i) => keys.map((k) => [k, i] as const))),
    retriesBySubtask: new Map(),
    retrying: new Map(),
    retries: [],
    guarantee,
  };
  return { job, placement, restore };
}
