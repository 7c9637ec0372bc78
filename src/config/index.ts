/** Settings decided once: the defaults every node flag, config and API reads (bottom layer, no imports). */
export {
  COORDINATOR_DEFAULTS,
  DEFAULT_CONTROL_PORT,
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  DEFAULT_HOST,
  DEFAULT_MAX_INFLIGHT_FRAME_BYTES,
  HA_DEFAULTS,
  OTLP_DEFAULTS,
  RECONNECT_DEFAULTS,
  WORKER_DEFAULTS,
} from './node-defaults.js';
