/**
 * Lint: the checks a submission and a node are gated on, run without a cluster (`clink lint`), by
 * `clink submit` before anything ships, by `clink node` at start, and by the coordinator at submit.
 * Each check returns findings (errors refuse, warnings do not); README "Lint" has the table.
 *
 * @example
 * const findings = [...checkpointSettingsFindings(settings), ...jobGraphFindings(spec, { checkpointing: true, regionRetries: 0 })];
 * refuseOnErrors(findings);
 */
export {
  errorsOf,
  formatFindings,
  lintError,
  lintWarning,
  refuseOnErrors,
  type Finding,
  type Severity,
} from './finding.js';
export { checkpointSettingsFindings, timerFinding, type CheckpointSettings } from './settings.js';
export {
  coordinatorConfigFindings,
  flagOf,
  roleFindings,
  workerConfigFindings,
  type CoordinatorLintConfig,
  type WorkerLintConfig,
} from './node.js';
export { autoscaleFindings, jobGraphFindings, type GraphLintOptions } from './graph.js';
export { connectorFindings } from './connectors.js';
export { determinismFindings, firstDifference } from './determinism.js';
export { jobFindings, type JobCheckInput } from './job-checks.js';
