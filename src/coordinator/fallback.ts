/**
 * A restore from a checkpoint older than one the job's sinks may already have committed: its newer
 * checkpoints were passed over (a damaged state file), or its COMMITTED record says commits past it were
 * confirmed. The span after the restored checkpoint is written again, and what that does depends on the
 * sink (connectors' ReplayEffect): a transactional one publishes again what it committed, so such a
 * restore is refused unless the job allows duplicates on fallback (--allow-duplicates-on-fallback), and
 * the job is then at-least-once; an at-least-once sink writes again what it wrote; a sink whose output a
 * replay repeats exactly (message ids, collect()) is untouched.
 */
import { sinkReplayEffect } from '../connectors/index.js';
import { StateError } from '../errors.js';
import type { PhysicalPlan } from '../plan/index.js';
import type { RestorePoint } from './checkpoint-storage.js';

interface FallbackVerdict {
  /** The newest checkpoint past the restored one whose commits may be visible. */
  beyond: number;
  /** Why: each newer checkpoint passed over, or the confirmed commits. */
  why: string;
  /** The newer checkpoints passed over for damage (none: the restore was of an older one by name). */
  damaged: number;
  /** Sinks that publish again what they committed (transactional), and sinks that write again (at-least-once). */
  republishing: string[];
  rewriting: string[];
}

/** A restore judged for a fallback. */
export interface FallbackCase {
  /** Who restores, for the messages: "the restore of clicks", "job 3f2a". */
  what: string;
  /** Where it restores, for the messages: "checkpoint 4", "the restore point it was submitted with". */
  to: string;
  /** The checkpoint it restores (0: one of another numbering, older than every skipped one). */
  restored: number;
  point: Pick<RestorePoint, 'skipped' | 'committedThrough'>;
  plan: PhysicalPlan;
  /** --allow-duplicates-on-fallback */
  allowed: boolean;
}

/**
 * Judge a restore: undefined when it falls back past nothing; the line to log when it may go ahead
 * (naming the sinks that write again); throws a StateError when transactional sinks would publish again
 * what they committed and duplicates were not allowed (the submit is refused, the restart fails the job).
 */
export function judgeFallback(c: FallbackCase): string | undefined {
  const v = fallbackOf(c.point, c.restored, c.plan);
  if (!v) return undefined;
  if (v.republishing.length > 0 && !c.allowed) {
    const fix = v.damaged > 0 ? `repair the damaged files of checkpoint ${v.damaged}` : 'restore the newest checkpoint';
    throw new StateError(
      `${v.why}; ${c.what} cannot fall back to ${c.to}: sinks ${v.republishing.join(', ')} would publish again what they committed up to checkpoint ${v.beyond}; ` +
        `${fix}, or restore with --allow-duplicates-on-fallback to accept those duplicates (the job is then at-least-once)`,
    );
  }
  const effects = [
    ...(v.republishing.length > 0
      ? [
          `sinks ${v.republishing.join(', ')} publish again what they committed after it (--allow-duplicates-on-fallback)`,
        ]
      : []),
    ...(v.rewriting.length > 0 ? [`sinks ${v.rewriting.join(', ')} write again what they wrote after it`] : []),
  ];
  return `${v.why}; ${c.what} falls back to ${c.to}${effects.length > 0 ? `: ${effects.join('; ')}` : ' (its sinks repeat nothing a replay writes)'}`;
}

function fallbackOf(point: FallbackCase['point'], restored: number, plan: PhysicalPlan): FallbackVerdict | undefined {
  const newer = point.skipped.filter((s) => s.checkpointId > restored);
  const damaged = Math.max(0, ...newer.map((s) => s.checkpointId));
  const beyond = Math.max(point.committedThrough, damaged);
  if (beyond <= restored) return undefined;
  const why =
    newer.length > 0
      ? newer.map((s) => `checkpoint ${s.checkpointId} is unusable (${s.reason})`).join('; ')
      : `the commits of checkpoints up to ${point.committedThrough} were confirmed`;
  const sinks = plan.spec.operators.filter((op) => op.type === 'sink');
  const named = (effect: string): string[] =>
    sinks.filter((op) => sinkReplayEffect(op) === effect).map((op) => `'${op.name}' (${String(op.options.connector)})`);
  return { beyond, why, damaged, republishing: named('republishes'), rewriting: named('rewrites') };
}
