import { InvalidArgumentError } from '../errors.js';

export type WindowAssigner =
  | { readonly kind: 'tumbling'; readonly sizeMs: number; readonly offsetMs: number }
  | { readonly kind: 'sliding'; readonly sizeMs: number; readonly slideMs: number; readonly offsetMs: number }
  | { readonly kind: 'session'; readonly gapMs: number };

function positive(what: string, v: number): number {
  if (!Number.isFinite(v) || v <= 0 || !Number.isInteger(v)) {
    throw new InvalidArgumentError(`${what} must be a positive whole number of milliseconds, got ${String(v)}`);
  }
  return v;
}

/** Window assigners: `Windows.tumbling(60_000)`, `Windows.sliding(60_000, 10_000)`, `Windows.session(30_000)`. */
export const Windows = {
  tumbling(sizeMs: number, options: { offsetMs?: number } = {}): WindowAssigner {
    return { kind: 'tumbling', sizeMs: positive('Windows.tumbling size', sizeMs), offsetMs: options.offsetMs ?? 0 };
  },
  sliding(sizeMs: number, slideMs: number, options: { offsetMs?: number } = {}): WindowAssigner {
    positive('Windows.sliding size', sizeMs);
    positive('Windows.sliding slide', slideMs);
    if (slideMs > sizeMs)
      throw new InvalidArgumentError(`Windows.sliding slide (${slideMs}) must not exceed size (${sizeMs})`);
    return { kind: 'sliding', sizeMs, slideMs, offsetMs: options.offsetMs ?? 0 };
  },
  session(gapMs: number): WindowAssigner {
    return { kind: 'session', gapMs: positive('Windows.session gap', gapMs) };
  },
} as const;
