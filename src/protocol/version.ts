/**
 * Protocol version negotiation. Each peer declares the protocol it speaks and the oldest it talks to;
 * two peers talk only when each falls inside the other's range. A field added at a message's tail is
 * not a reason to bump the version (the additive-tail idiom handles it); a field changing meaning or
 * width, a kind repurposed, or a new kind that must be gated to peers that know it is.
 */
import { ClinkError } from '../errors.js';

/**
 * The protocol this build speaks. 2: a worker may end its session when the coordinator sends no frame
 * (a HeartbeatAck at least) for its coordinator heartbeat timeout; a v1 coordinator answers no
 * heartbeat reliably, so a worker only does this with a v2 coordinator. 3: a worker confirms each
 * checkpoint its sinks committed (CheckpointCommitted), a kind a v2 coordinator does not know. 4: a
 * coordinator converts an aligned checkpoint to unaligned in place (ConvertCheckpoint), a kind a v3
 * worker does not know; it takes one again unaligned on a job with such a worker.
 */
export const CLUSTER_PROTOCOL_VERSION = 4;
/** The first protocol whose workers take ConvertCheckpoint. */
export const CONVERT_CHECKPOINT_PROTOCOL_VERSION = 4;
/** The first protocol whose coordinators take CheckpointCommitted. */
export const COMMIT_CONFIRMATION_PROTOCOL_VERSION = 3;
/** The first protocol whose coordinators answer every heartbeat with a HeartbeatAck. */
export const HEARTBEAT_ACK_PROTOCOL_VERSION = 2;
/** The oldest protocol this build talks to. Raising it strands every older peer: an end-of-support decision. */
export const MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION = 1;

export interface ProtocolRange {
  /** The protocol a peer speaks; 0 or absent reads as 1 (a peer from before versioning). */
  version: number;
  minCompatible: number;
}

export class ProtocolVersionError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_PROTOCOL_VERSION', message);
  }
}

export type Compatibility = { ok: true } | { ok: false; message: string; upgrade: 'local' | 'remote' };

const norm = (v: number): number => (v > 0 ? v : 1);

/**
 * Whether `local` and `remote` can talk. Symmetric on purpose: "I can read you" does not imply the
 * reverse. A refusal names both versions and which end to upgrade.
 */
export function checkProtocolCompatibility(
  local: ProtocolRange,
  remote: ProtocolRange,
  names: { local: string; remote: string } = { local: 'this node', remote: 'the peer' },
): Compatibility {
  const lv = norm(local.version);
  const lmin = norm(local.minCompatible);
  const rv = norm(remote.version);
  const rmin = norm(remote.minCompatible);
  const detail = `${names.local} speaks protocol ${lv} (talks to ${lmin}..${lv}), ${names.remote} speaks ${rv} (talks to ${rmin}..${rv})`;
  if (rv < lmin)
    return {
      ok: false,
      upgrade: 'remote',
      message: `protocol mismatch: ${detail}; upgrade ${names.remote} to protocol ${lmin} or later`,
    };
  if (lv < rmin)
    return {
      ok: false,
      upgrade: 'local',
      message: `protocol mismatch: ${detail}; upgrade ${names.local} to protocol ${rmin} or later`,
    };
  return { ok: true };
}

/** This build's range. */
export const LOCAL_PROTOCOL: ProtocolRange = {
  version: CLUSTER_PROTOCOL_VERSION,
  minCompatible: MIN_COMPATIBLE_CLUSTER_PROTOCOL_VERSION,
};
