/**
 * What a subtask that has ended reports (SubtaskFinished): whether it succeeded, why not in one line
 * (for user code, with its original stack), its counts and what it collected, capped.
 */
import { ClinkError, isFatal, PeerLostError } from '../errors.js';
import { encodeCollected } from '../protocol/index.js';
import { MAX_COLLECTED_BYTES } from '../runtime/index.js';

export interface SubtaskReport {
  taskId: string;
  subtaskIndex: number;
  ok: boolean;
  error: string;
  recordsIn: number;
  recordsOut: number;
  collected: Uint8Array;
  peerLost: boolean;
  /** It failed while starting (connectors, operators, open, restore): restarting would repeat it. */
  fatal: boolean;
}

/** What a report is made from: an ended subtask of a deploy. */
export interface EndedSubtask {
  task: { id: string };
  index: number;
  collected: Record<string, unknown[]>;
  /** Its first error; a collect() over the cap becomes it when there is none. */
  error?: Error;
  cancelled: boolean;
  runner?: { recordsIn: number; recordsOut: number };
}

export function subtaskReport(st: EndedSubtask): SubtaskReport {
  let collected: Uint8Array = new Uint8Array(0);
  if (Object.keys(st.collected).length > 0) {
    collected = encodeCollected(st.collected);
    if (collected.length > MAX_COLLECTED_BYTES) {
      st.error ??= new ClinkError(
        'CLINK_ERR_CONNECTOR',
        `collect() gathered ${collected.length} bytes in one subtask, above the ${MAX_COLLECTED_BYTES}-byte cap; write large results to a sink`,
      );
      collected = new Uint8Array(0);
    }
  }
  return {
    taskId: st.task.id,
    subtaskIndex: st.index,
    ok: !st.error && !st.cancelled,
    error: st.error ? describe(st.error) : st.cancelled ? 'cancelled' : '',
    recordsIn: st.runner?.recordsIn ?? 0,
    recordsOut: st.runner?.recordsOut ?? 0,
    collected,
    peerLost: st.error instanceof PeerLostError,
    fatal: isFatal(st.error),
  };
}

/** One line for a SubtaskFinished error: the message, and for user code the original stack. */
function describe(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  if (err instanceof ClinkError && err.code === 'CLINK_ERR_USER_CODE' && cause instanceof Error && cause.stack) {
    return `${err.message}\n\ncaused by: ${cause.stack}`;
  }
  return err.message;
}
