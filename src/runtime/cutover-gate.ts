/**
 * A hot rescale's gate in one subtask (worker/hot-rescale-host.ts drives it, design record 016): armed for a
 * checkpoint, the subtask stops right after sending that checkpoint's barrier on, between batches, and
 * waits until it is told to go on (rewired meanwhile) or to retire (replaced).
 *
 *   idle ──arm(N)──► armed ──barrier N sent──► holding ──release(resume)──► idle
 *                      │                         └──release(retire)──► the subtask ends quietly
 *                      └──release(resume)──► idle (given up before N)
 */
import { deferred, type Deferred } from '../util/index.js';

/** What a subtask waiting at a hot rescale's gate does next: go on, or stop for good (it is replaced). */
export type CutoverAction = 'resume' | 'retire';

export class CutoverGate {
  private armed: { checkpointId: number; action: Deferred<CutoverAction>; holding: boolean } | undefined;

  /** Stop after checkpoint `checkpointId`'s barrier (replacing any earlier arming). */
  arm(checkpointId: number): void {
    this.armed = { checkpointId, action: deferred<CutoverAction>(), holding: false };
  }

  /** Go on or retire; before the barrier, 'resume' disarms. */
  release(action: CutoverAction): void {
    const a = this.armed;
    if (!a) return;
    if (action === 'resume') this.armed = undefined;
    a.action.resolve(action);
  }

  /** Whether the subtask waits at the gate now: only then may its channels and edges be rewired. */
  get holding(): boolean {
    return this.armed?.holding === true;
  }

  /** Checkpoint `checkpointId`'s barrier was sent: what to wait for before going on, or undefined when the gate is not armed for it. */
  passed(checkpointId: number): Promise<CutoverAction> | undefined {
    const a = this.armed;
    if (a?.checkpointId !== checkpointId) return undefined;
    a.holding = true;
    return a.action.promise.finally(() => {
      if (this.armed === a) this.armed = undefined;
    });
  }
}
