/**
 * The checks on a node's settings (`clink node` flags, a CoordinatorConfig): bounds that would make
 * every worker be declared lost, liveness settings that fight each other, and delays too long for a
 * timer. `clink node` logs each at start and refuses to start on an error; a Coordinator refuses a
 * config with one.
 */
import { MAX_FRAME_BYTES } from '../protocol/index.js';
import { lintError, lintWarning, type Finding } from './finding.js';
import { timerFinding } from './settings.js';

/** The flag of a setting: its camelCase name in kebab case. */
export const flagOf = (key: string): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const OUTBOUND_BOUNDS = ['maxOutboundControlFrames', 'maxOutboundControlBytes', 'maxOutboundBulkBytes'] as const;
const COORDINATOR_DELAYS = [
  'heartbeatTimeoutMs',
  'watchdogIntervalMs',
  'handshakeTimeoutMs',
  'outboundStallTimeoutMs',
  'outboundFlushTimeoutMs',
  'submitWaitForSlotsMs',
  'restartDrainTimeoutMs',
  'restartCapacityTimeoutMs',
  'restartBudgetResetAfterMs',
  'connectorCheckTimeoutMs',
  'clientIdleTimeoutMs',
  'frameBodyTimeoutMs',
  'restartBackoffInitialMs',
  'restartBackoffMaxMs',
] as const;

/** The coordinator settings these checks read (a CoordinatorConfig has them all). */
export type CoordinatorLintConfig = Record<
  (typeof OUTBOUND_BOUNDS)[number] | (typeof COORDINATOR_DELAYS)[number],
  number
>;

/** A coordinator's liveness and outbound settings, as the reference lists them (lint_liveness_config, lint_outbound_config). */
export function coordinatorConfigFindings(c: CoordinatorLintConfig): Finding[] {
  const out: Finding[] = [];
  for (const k of OUTBOUND_BOUNDS) {
    if (c[k] <= 0) {
      out.push(
        lintError(
          'outbound-bound-zero',
          `${flagOf(k)} ${c[k]}: a bound of zero refuses every frame of its class, and each refusal costs the worker its connection, so every worker would be lost at its first frame; give a positive bound`,
        ),
      );
    }
  }
  if (c.maxOutboundBulkBytes > 0 && c.maxOutboundBulkBytes < MAX_FRAME_BYTES) {
    out.push(
      lintWarning(
        'outbound-bulk-below-frame',
        `--max-outbound-bulk-bytes ${c.maxOutboundBulkBytes} is below one largest frame (${MAX_FRAME_BYTES} bytes): a Deploy carries its job module, so two queued back to back to a healthy worker can reach the bound and cost it its connection`,
      ),
    );
  }
  const stall = c.outboundStallTimeoutMs;
  if (c.watchdogIntervalMs > c.heartbeatTimeoutMs) {
    out.push(
      lintWarning(
        'watchdog-above-heartbeat',
        `--watchdog-interval-ms ${c.watchdogIntervalMs} is longer than --heartbeat-timeout-ms ${c.heartbeatTimeoutMs}: the watchdog judges liveness, so a lost worker is found only every ${c.watchdogIntervalMs} ms`,
      ),
    );
  }
  // With the stall verdict off only the bounds are checked.
  if (stall > 0) {
    if (stall <= c.heartbeatTimeoutMs) {
      out.push(
        lintWarning(
          'stall-within-heartbeat',
          `--outbound-stall-timeout-ms ${stall} is at or below --heartbeat-timeout-ms ${c.heartbeatTimeoutMs}: the stall verdict is for a worker that heartbeats but has stopped reading; this short, it also takes one whose reader is held up for less than the heartbeat tolerates`,
        ),
      );
    }
    if (stall >= c.restartDrainTimeoutMs) {
      out.push(
        lintWarning(
          'stall-beyond-drain',
          `--outbound-stall-timeout-ms ${stall} is at or above --restart-drain-timeout-ms ${c.restartDrainTimeoutMs}: a survivor that stops reading during a restart would fail the job at the drain deadline before the stall verdict folds it into the restart`,
        ),
      );
    }
    if (c.watchdogIntervalMs > stall) {
      out.push(
        lintWarning(
          'watchdog-above-stall',
          `--watchdog-interval-ms ${c.watchdogIntervalMs} is longer than --outbound-stall-timeout-ms ${stall}: the watchdog runs the stall check, so the effective stall timeout is ${c.watchdogIntervalMs} ms`,
        ),
      );
    }
  }
  if (c.restartBackoffInitialMs > c.restartBackoffMaxMs) {
    out.push(
      lintWarning(
        'backoff-initial-above-max',
        `--restart-backoff-initial-ms ${c.restartBackoffInitialMs} is above --restart-backoff-max-ms ${c.restartBackoffMaxMs}: every wait is cut to the maximum`,
      ),
    );
  }
  for (const k of COORDINATOR_DELAYS) out.push(...timerFinding(flagOf(k), c[k]));
  return out;
}

export interface WorkerLintConfig {
  heartbeatIntervalMs: number;
  peerUpdateTimeoutMs: number;
  coordinatorHeartbeatTimeoutMs: number;
  taskStallTimeoutMs: number;
  batchLingerMs: number;
  reconnectInitialBackoffMs: number;
  reconnectMaxBackoffMs: number;
}

/** A worker's settings; `coordinatorHeartbeatTimeoutMs` is the coordinator's --heartbeat-timeout-ms it will meet (the default unless given). */
export function workerConfigFindings(w: WorkerLintConfig, coordinatorHeartbeatTimeoutMs: number): Finding[] {
  const out: Finding[] = [];
  if (w.heartbeatIntervalMs >= coordinatorHeartbeatTimeoutMs) {
    out.push(
      lintWarning(
        'heartbeat-interval-above-timeout',
        `--heartbeat-interval-ms ${w.heartbeatIntervalMs} is at or above the coordinator's --heartbeat-timeout-ms ${coordinatorHeartbeatTimeoutMs}: an idle worker would be declared lost between two heartbeats`,
      ),
    );
  }
  if (w.reconnectInitialBackoffMs > w.reconnectMaxBackoffMs) {
    out.push(
      lintWarning(
        'backoff-initial-above-max',
        `--reconnect-initial-backoff-ms ${w.reconnectInitialBackoffMs} is above --reconnect-max-backoff-ms ${w.reconnectMaxBackoffMs}: every wait is cut to the maximum`,
      ),
    );
  }
  for (const k of [
    'heartbeatIntervalMs',
    'peerUpdateTimeoutMs',
    'coordinatorHeartbeatTimeoutMs',
    'taskStallTimeoutMs',
    'batchLingerMs',
    'reconnectInitialBackoffMs',
    'reconnectMaxBackoffMs',
  ] as const) {
    out.push(...timerFinding(flagOf(k), w[k]));
  }
  return out;
}

/** Flags given that the node's role does not read: accepted, and ignored. */
export function roleFindings(
  role: 'coordinator' | 'worker',
  given: readonly { flag: string; role: 'coordinator' | 'worker' }[],
): Finding[] {
  return given
    .filter((g) => g.role !== role)
    .map((g) =>
      lintWarning('flag-for-other-role', `${g.flag} is a ${g.role} setting and is ignored by --role ${role}`),
    );
}
