/**
 * What a first frame must pass before its peer gets a session: a protocol range this coordinator
 * shares, and (when the coordinator requires one) the cluster's token. Each refusal is counted, logged
 * and returned as the one line the peer is told.
 */
import type { Logger } from '../log/index.js';
import type { ClinkMetrics } from '../metrics/index.js';
import { checkProtocolCompatibility, LOCAL_PROTOCOL } from '../protocol/index.js';
import { tokensEqual } from '../util/index.js';
import type { AdmissionLogLimiter } from './admission.js';

export interface FirstFrame {
  protocolVersion: number;
  minCompatibleProtocolVersion: number;
  authToken: string;
}

export class PeerChecks {
  constructor(
    private readonly metrics: ClinkMetrics,
    private readonly log: Logger,
    private readonly admissionLog: AdmissionLogLimiter,
    /** The cluster's token; none: no token is asked for. */
    private readonly authToken: string | undefined,
  ) {}

  /** Why the peer (`who`, a `role` at `peer`) is refused, or undefined when it passes. */
  refusal(first: FirstFrame, who: string, role: 'worker' | 'client', peer: string): string | undefined {
    const c = checkProtocolCompatibility(
      LOCAL_PROTOCOL,
      { version: first.protocolVersion, minCompatible: first.minCompatibleProtocolVersion },
      { local: 'the coordinator', remote: who },
    );
    if (!c.ok) {
      this.metrics.protocolMismatches.inc();
      this.log.warn(c.message);
      return c.message;
    }
    const token = this.authToken;
    if (!token || tokensEqual(first.authToken, token)) return undefined;
    const given = first.authToken !== '';
    this.metrics.authRefusals.inc({ role });
    this.admissionLog.warn(`${who} (${peer}) refused: ${given ? 'wrong' : 'no'} CLINK_AUTH_TOKEN`);
    return `authentication failed: this coordinator requires the cluster's token and the ${role}'s is ${given ? 'wrong' : 'missing'}; set CLINK_AUTH_TOKEN to it`;
  }
}
