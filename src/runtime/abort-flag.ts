/**
 * Whether a subtask's job has been cancelled, as a field of an object of one shape. Node gives every
 * AbortSignal a hidden class of its own, so optimized code that reads `signal.aborted` (or looks a
 * signal up) checks for that one signal's map, and the next job's signal deoptimizes it: a task's batch
 * loop was recompiled on every job a worker ran (issue 24). The loop reads this flag, found by its
 * subtask's setup (one class, subtask.ts), which buildSubtask registers before the loop runs.
 */

export interface AbortFlag {
  readonly aborted: boolean;
}

const bySignal = new WeakMap<AbortSignal, AbortFlag>();
const bySetup = new WeakMap<object, AbortFlag>();

/** The flag of `setup`'s signal, set by its abort event (which fires as it aborts). */
export function abortFlag(setup: { readonly signal: AbortSignal }): AbortFlag {
  const flag = bySetup.get(setup);
  return flag ?? register(setup);
}

/** Link `setup` to its signal's flag (one listener per signal, however many subtasks read it). */
export function register(setup: { readonly signal: AbortSignal }): AbortFlag {
  const signal = setup.signal;
  let flag = bySignal.get(signal);
  if (!flag) {
    const f = { aborted: signal.aborted };
    if (!f.aborted) signal.addEventListener('abort', () => (f.aborted = true), { once: true });
    bySignal.set(signal, (flag = f));
  }
  bySetup.set(setup, flag);
  return flag;
}
