/**
 * A lint finding: an error (the submission or the node would be refused) or a warning (accepted, but
 * something is ignored, contradicts itself, or will not do what it says). Each has a stable check id,
 * the name the README's table of checks gives it.
 */
import { ClinkError, type ErrorCode } from '../errors.js';

export type Severity = 'error' | 'warning';

export interface Finding {
  severity: Severity;
  /** Stable id of the check (README "Lint"). */
  check: string;
  /** One line: what is wrong and how to fix it. */
  message: string;
  /** The error code a refusal of this finding carries. */
  code: ErrorCode;
}

export const lintError = (check: string, message: string, code: ErrorCode = 'CLINK_ERR_INVALID_ARGUMENT'): Finding => ({
  severity: 'error',
  check,
  message,
  code,
});

export const lintWarning = (check: string, message: string): Finding => ({
  severity: 'warning',
  check,
  message,
  code: 'CLINK_ERR_INVALID_ARGUMENT',
});

export const errorsOf = (findings: readonly Finding[]): Finding[] => findings.filter((f) => f.severity === 'error');

/**
 * Refuse what has errors: one ClinkError with the first error's code and every error's message, a line
 * each (the CLI prints `error: ` before the first; the rest carry their own).
 */
export function refuseOnErrors(findings: readonly Finding[]): void {
  const errors = errorsOf(findings);
  if (errors.length === 0) return;
  throw new ClinkError(errors[0]!.code, errors.map((f) => f.message).join('\nerror: '));
}

/** Findings as text lines (`error: ...`, `warning: ...`, then a count) or as one JSON document. */
export function formatFindings(findings: readonly Finding[], format: 'text' | 'json'): string {
  const errors = errorsOf(findings).length;
  const warnings = findings.length - errors;
  if (format === 'json') {
    return (
      JSON.stringify({
        ok: errors === 0,
        errors,
        warnings,
        findings: findings.map(({ severity, check, message }) => ({ severity, check, message })),
      }) + '\n'
    );
  }
  const lines = findings.map((f) => `${f.severity}: ${f.message} [${f.check}]`);
  const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;
  lines.push(
    findings.length === 0 ? 'lint: clean' : `lint: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}`,
  );
  return lines.join('\n') + '\n';
}
