/**
 * The plan: JobGraphSpec (what a job declares), key groups, and the PhysicalPlan (chained tasks).
 *
 * @example
 * const plan = createPhysicalPlan(spec);
 * for (const t of plan.tasks) console.log(t.name, t.parallelism);
 */
export {
  MAX_PARALLELISM,
  KeyGroupRange,
  keyGroupOf,
  hashNormalizedKey,
  normalizeKey,
  isObjectKey,
  murmurString,
  murmurInt,
  operatorIndexForKeyGroup,
} from './keygroups.js';
export {
  EDGE_KINDS,
  SIDE_OUTPUTS,
  type SideOutput,
  OPERATOR_TYPES,
  CHAINING_STRATEGIES,
  jobGraphSpecSchema,
  specProblems,
  type EdgeKind,
  type OperatorType,
  type ChainingStrategy,
  type OperatorSpec,
  type EdgeSpec,
  type JobGraphSpec,
} from './spec.js';
export {
  createPhysicalPlan,
  validateSpec,
  keyedAboveKeyGroups,
  chainingRule,
  DEFAULT_SLOT_SHARING_GROUP,
  type PhysicalPlan,
  type TaskSpec,
  type SubtaskId,
} from './planner.js';
export {
  subtaskKey,
  taskOf,
  networkEdges,
  inputChannels,
  channelNumber,
  failoverRegions,
  replayOrderProblem,
  type InputChannel,
} from './topology.js';
export { withoutUnchainablePreAggregation, type PrunedSpec } from './pre-aggregation.js';
export { slotNeed } from './slots.js';
export {
  describeSchema,
  schemaIncompatibility,
  schemaProblem,
  stateRestoreVerdict,
  STATE_KINDS,
  type StateDeclarationSpec,
  type StateKind,
  type StateRestoreVerdict,
  type StateSchema,
} from './state-schema.js';
