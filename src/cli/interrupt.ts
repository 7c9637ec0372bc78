/**
 * Ctrl-C and SIGTERM for the client commands: the first signal does what the running command says
 * (by default: stop now), a second one stops at once. Either way the exit code is 130 and the one
 * line says "interrupted". `clink node` handles its own signals (it stops gracefully, exit 0).
 */
import { ClinkError } from '../errors.js';

export class InterruptedError extends ClinkError {
  constructor(detail?: string) {
    super('CLINK_ERR_INTERRUPTED', detail ? `interrupted: ${detail}` : 'interrupted');
  }
}

type Handler = (signal: NodeJS.Signals) => void;
let handler: Handler | undefined;
let signals = 0;

function exitNow(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(130);
}

function onSignal(signal: NodeJS.Signals): void {
  signals++;
  if (signals > 1 || !handler) exitNow('interrupted');
  handler(signal);
}

/** Take over SIGINT and SIGTERM for this process; returns the undo. */
export function installInterrupts(): () => void {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    handler = undefined;
    signals = 0;
  };
}

/** While the returned undo is not called, the first signal calls `fn` instead of exiting. */
export function onInterrupt(fn: Handler): () => void {
  handler = fn;
  return () => {
    if (handler === fn) handler = undefined;
  };
}

/** The first signal exits 130 with `interrupted: <detail>`, after `before` (which ends a progress line). */
export function exitOnInterrupt(detail: string, before?: () => void): () => void {
  return onInterrupt(() => {
    before?.();
    exitNow(`interrupted: ${detail}`);
  });
}
