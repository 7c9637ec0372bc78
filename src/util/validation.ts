/**
 * Schema failures in words a user can act on: for each problem, where it is (named by the caller:
 * "option rowsPerSecond", "operator 'clicks' option rate"), what was expected and the value given.
 * zod's own account says what was expected but not what it got, and `Invalid input` for a union.
 */
import { inspect } from 'node:util';
import type { core } from 'zod';

type Issue = core.$ZodIssue;

function valueAt(input: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let v: unknown = input;
  for (const k of path) {
    if (typeof v !== 'object' || v === null || !(k in v)) return { found: false, value: undefined };
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return { found: true, value: v };
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  const s = inspect(v, { depth: 2, breakLength: Infinity });
  return s.length > 80 ? s.slice(0, 77) + '...' : s;
}

function expected(issue: Issue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.expected === 'number' && typeof value === 'number' ? 'a finite number' : `a ${issue.expected}`}`;
    case 'invalid_union':
      return 'expected a JSON value (a string, a finite number, true or false, null, an array or an object)';
    case 'too_small':
      return `expected ${issue.origin === 'string' || issue.origin === 'array' ? 'a length ' : ''}${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      return `expected ${issue.origin === 'string' || issue.origin === 'array' ? 'a length ' : ''}${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((x) => show(x)).join(', ')}`;
    case 'unrecognized_keys':
      return `unknown ${issue.keys.length > 1 ? 'keys' : 'key'} ${issue.keys.map((k) => show(k)).join(', ')}`;
    default:
      return issue.message.replace(/^Invalid input: /, '');
  }
}

/**
 * One line per issue: `<where>: <expected>, got <value>`. `where(path)` names the place a path points
 * at, in the caller's terms.
 */
export function describeIssues(issues: readonly Issue[], input: unknown, where: (path: readonly PropertyKey[]) => string): string {
  return issues
    .map((issue) => {
      const at = valueAt(input, issue.path);
      const got = issue.code === 'unrecognized_keys' ? '' : at.found ? `, got ${show(at.value)}` : ', got nothing';
      const hint = typeof at.value === 'number' && !Number.isFinite(at.value) ? ' (a --param that is not a number?)' : '';
      return `${where(issue.path)}: ${expected(issue, at.value)}${got}${hint}`;
    })
    .join('\n');
}

/** `a.b[0].c` */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i > 0 ? '.' : ''}${String(k)}`)).join('');
}
