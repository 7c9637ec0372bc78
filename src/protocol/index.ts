/**
 * The cluster wire protocol, pure (no I/O): framing, every message kind, version negotiation and the
 * caps on what a frame may make a node allocate. `net/` moves these frames over sockets.
 *
 * @example
 * const frame = encodeFrame(makeMessage('Heartbeat', { seq: 7 }));
 * const msg = decodeFrame(frame); // { type: 'Heartbeat', seq: 7, sentAtMs: 0, runningSubtasks: 0 }
 */
export {
  MAX_FRAME_BYTES,
  MAX_FIRST_FRAME_BYTES,
  MAX_REGISTER_STRING_BYTES,
  FRAME_CHUNK_BYTES,
  FRAME_HEADER_BYTES,
  FrameDecodeError,
  FrameTooLargeError,
  MessageBuilder,
  MessageReader,
} from './wire.js';
export {
  MESSAGES,
  MessageKind,
  MESSAGE_BY_KIND,
  CLIENT_REQUEST_KINDS,
  CheckpointConfig,
  ALIGNMENT_MODES,
  type AlignmentMode,
  STATE_BACKEND_TYPES,
  type StateBackendType,
  DeploymentTask,
  JobModule,
  EdgePort,
  PeerAddress,
  SubtaskPeers,
  JobSummary,
  JobProgress,
  SubtaskProgress,
  type SubtaskProgressReport,
  type Message,
  type MessageName,
  type MessageBody,
  type MessageOf,
  type MessageDef,
  type Direction,
} from './messages.js';
export { encodeMessage, encodeFrame, decodeMessage, decodeFrame, makeMessage } from './codec.js';
export {
  CLUSTER_PROTOCOL_VERSION,
  HEARTBEAT_ACK_PROTOCOL_VERSION,
  COMMIT_CONFIRMATION_PROTOCOL_VERSION,
  CONVERT_CHECKPOINT_PROTOCOL_VERSION,
  MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION,
  LOCAL_PROTOCOL,
  checkProtocolCompatibility,
  ProtocolVersionError,
  type ProtocolRange,
  type Compatibility,
} from './version.js';
export type { Codec, Descriptor, FieldSpec, Fields } from './schema.js';
export {
  encodeRecordBatch,
  decodeRecordBatch,
  MAX_RECORDS_PAST_BYTES,
  type BatchEncoding,
  type EncodedBatch,
} from './batch.js';
export { COLUMNS_SUPPORTED } from './columns.js';
export {
  JOB_STATES,
  JOB_TRANSITIONS,
  isRedeployingJobState,
  isTerminalJobState,
  type JobStateName,
} from './job-states.js';
export { encodeCollected, decodeCollected } from './collected.js';
