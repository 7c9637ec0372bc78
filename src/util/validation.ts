/**
 * Schema failures in words a user can act on: for each problem, where it is (named by the caller:
 * "option rowsPerSecond", "operator 'clicks' option rate"), what was expected and the value given.
 * zod's own account says what was expected but not what it got, and `Invalid input` for a union.
 */
import { inspect } from 'node:util';
import type { core } from 'zod';

type Issue = core.$ZodIssue;
type Schema = core.$ZodType;

/** The keys an object schema knows at `path` (through defaults, optionals, pipes, records, arrays and unions). */
function keysAt(schema: Schema | undefined, path: readonly PropertyKey[]): string[] {
  if (!schema) return [];
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  const inner = (k: string): Schema | undefined => def[k] as Schema | undefined;
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, Schema>;
      if (path.length === 0) return Object.keys(shape);
      return keysAt(shape[String(path[0])], path.slice(1));
    }
    case 'pipe':
      return keysAt(inner('in'), path);
    case 'optional':
    case 'default':
    case 'prefault':
    case 'nullable':
    case 'readonly':
      return keysAt(inner('innerType'), path);
    case 'record':
      return path.length === 0 ? [] : keysAt(inner('valueType'), path.slice(1));
    case 'array':
      return path.length === 0 ? [] : keysAt(inner('element'), path.slice(1));
    case 'union':
      return [...new Set((def.options as Schema[]).flatMap((o) => keysAt(o, path)))];
    default:
      return [];
  }
}

/** Levenshtein distance, case-insensitive. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    row = next;
  }
  return row[y.length]!;
}

/** The known key an unknown one most likely misspells, when one is close enough to suggest. */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(unknown, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(Math.max(unknown.length, best.length) / 3))
    ? best
    : undefined;
}

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

function expected(issue: Issue, value: unknown, schema: Schema | undefined): string {
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
    case 'unrecognized_keys': {
      const known = keysAt(schema, issue.path);
      const named = issue.keys.map((k) => {
        const near = closestKey(k, known);
        return `${show(k)}${near ? ` (did you mean ${show(near)}?)` : ''}`;
      });
      return `unknown ${issue.keys.length > 1 ? 'keys' : 'key'} ${named.join(', ')}${known.length > 0 ? `; known: ${known.join(', ')}` : ''}`;
    }
    default:
      return issue.message.replace(/^Invalid input: /, '');
  }
}

/**
 * One line per issue: `<where>: <expected>, got <value>`. `where(path)` names the place a path points
 * at, in the caller's terms ('' for none). With the `schema`, an unknown key names the known one it most likely
 * misspells, and the keys known there.
 */
export function describeIssues(
  issues: readonly Issue[],
  input: unknown,
  where: (path: readonly PropertyKey[]) => string,
  schema?: Schema,
): string {
  return issues
    .map((issue) => {
      const at = valueAt(input, issue.path);
      const got = issue.code === 'unrecognized_keys' ? '' : at.found ? `, got ${show(at.value)}` : ', got nothing';
      const hint =
        typeof at.value === 'number' && !Number.isFinite(at.value) ? ' (a --param that is not a number?)' : '';
      const place = where(issue.path);
      return `${place ? `${place}: ` : ''}${expected(issue, at.value, schema)}${got}${hint}`;
    })
    .join('\n');
}

/** `a.b[0].c` */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i > 0 ? '.' : ''}${String(k)}`)).join('');
}
