/**
 * The job checks together, as `clink run`, `submit`, `lint` and the HTTP submit apply them: the
 * checkpoint settings, the build's determinism (when it can be built again) and the graph.
 */
import { determinismFindings } from './determinism.js';
import type { Finding } from './finding.js';
import { autoscaleFindings, jobGraphFindings } from './graph.js';
import { checkpointSettingsFindings, type CheckpointSettings } from './settings.js';
import type { JobGraphSpec } from '../plan/index.js';

export interface JobCheckInput {
  settings: CheckpointSettings;
  /** Retries without checkpoints when the job sets none (-1): the coordinator's default; undefined: not known here, so not held against the job. */
  coordinatorRegionRetries?: number;
  slotSharing?: boolean;
  availableSlots?: number;
  autoscale?: { min: number; max: number };
}

/** The settings' findings, and with a job (`spec`) its build's and graph's. */
export function jobFindings(spec: JobGraphSpec | undefined, i: JobCheckInput, rebuild?: () => JobGraphSpec): Finding[] {
  const s = i.settings;
  const checkpointing = s.checkpointDir !== '';
  const out = checkpointSettingsFindings(s);
  if (spec && rebuild) out.push(...determinismFindings(spec, rebuild));
  if (spec) {
    out.push(
      ...jobGraphFindings(spec, {
        checkpointing,
        allowDuplicatesOnFallback: s.allowDuplicatesOnFallback,
        regionRetries: s.maxRestarts >= 0 ? s.maxRestarts : (i.coordinatorRegionRetries ?? Number.POSITIVE_INFINITY),
        ...(i.slotSharing !== undefined ? { slotSharing: i.slotSharing } : {}),
        ...(i.availableSlots !== undefined ? { availableSlots: i.availableSlots } : {}),
      }),
    );
  }
  if (i.autoscale) out.push(...autoscaleFindings(i.autoscale, s.checkpointDir !== '', spec));
  return out;
}
