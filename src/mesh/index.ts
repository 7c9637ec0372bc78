/**
 * Mesh mode (issue 23, docs/design/017-mesh-mode.md): a run with no control plane, the leader being one
 * of its workers. So far: the topology fingerprint the members agree on, the rendezvous, placement from
 * membership, and the links (one per pair). Not yet: the run itself (CLI, execution, epochs, failure).
 */
export { shapeDifference, topologyFingerprint, topologyShape, type TopologyShape } from './fingerprint.js';
export {
  join,
  lead,
  MeshError,
  DEFAULT_RENDEZVOUS_TIMEOUT_MS,
  type Joined,
  type JoinOptions,
  type Led,
  type LeadOptions,
  type Membership,
} from './rendezvous.js';
export { meshPlacement } from './placement.js';
export { ExchangeListener, openMesh, type MeshLinks, type OpenMeshOptions } from './links.js';
export { runMesh, meshJobId, type MeshRunOptions, type MeshOutcome } from './run.js';
export { LeaderRun, type LeaderRunDeps, type LeaderRunOptions, type RunOutcome } from './leader.js';
export { memberSlice, type MemberSlice } from './deploy.js';
