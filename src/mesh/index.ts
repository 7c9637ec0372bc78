/**
 * Mesh mode (issue 23, docs/design/017-mesh-mode.md): a run with no control plane, the leader being one
 * of its workers. So far: the topology fingerprint the members must agree on.
 */
export { shapeDifference, topologyFingerprint, topologyShape, type TopologyShape } from './fingerprint.js';
