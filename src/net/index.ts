/**
 * Sockets and frames: reading frames under caps and deadlines, dispatching them per connection, and
 * the bounded outbox a coordinator writes each worker through.
 *
 * @example
 * const conn = new FrameConnection(socket, { role: 'coordinator', metrics, log });
 * conn.start({ onMessage: (m) => handle(m) });
 */
export { FrameBudget, FrameMemoryError } from './frame-budget.js';
export { PeerRejections, REJECTION_LOG_INTERVAL_MS, type RejectionReason } from './rejections.js';
export { rejectionReason } from './connection.js';
export { FrameReader, FrameTimeoutError, type FrameReaderOptions } from './frame-reader.js';
export {
  FrameConnection,
  DEFAULT_MAX_DISPATCH_BACKLOG_FRAMES,
  DEFAULT_MAX_DISPATCH_BACKLOG_BYTES,
  type FrameConnectionOptions,
  type FrameHandlers,
  type ConnectionClosed,
  type CloseReason,
} from './connection.js';
export {
  Outbox,
  DEFAULT_OUTBOX_LIMITS,
  type OutboxLimits,
  type OutboxOptions,
  type OutboxStop,
  type OutboxState,
  type PostResult,
} from './outbox.js';
export { writeFrame, ADMISSION_REPLY_SEND_BOUND_MS } from './write-frame.js';
export { sniffForeignProtocol, WrongProtocolError, wrongPortMessage, type ForeignProtocol } from './sniff.js';
export {
  connectWithin,
  loadTlsServer,
  loadTlsClient,
  secureAccepted,
  isTlsFailure,
  tlsReason,
  noAnswerError,
  peerIdentity,
  hostnameMismatch,
  tlsConnectOptions,
  certificateNames,
  type TlsServerConfig,
  type TlsClientConfig,
} from './tls.js';
export { dial, listenOn } from './endpoints.js';
export { gatheredWrites } from './gathered-writes.js';
