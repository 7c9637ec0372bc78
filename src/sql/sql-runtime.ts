/**
 * The helpers generated SQL code calls (as `$rt.name`): the few operations that do not fit one
 * JavaScript expression. Each is small enough for V8 to inline at the call site.
 */

type Bool = boolean | null;

/** A row the query cannot compute (division by zero, a failed CAST): the job fails with it as user code would. */
export class SqlRuntimeError extends Error {
  override name = 'SqlRuntimeError';
}

const likeCache = new Map<string, RegExp>();
const regexpCache = new Map<string, RegExp>();
const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** A LIKE pattern as a regular expression: % any run, _ any one character, everything else literal. */
export function likeRegExp(pattern: string): RegExp {
  const body = [...pattern]
    .map((c) => (c === '%' ? '.*' : c === '_' ? '.' : c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`, 's');
}

export const SQL_RUNTIME = {
  /** Three-valued AND: FALSE wins over NULL. */
  and(a: Bool, b: Bool): Bool {
    if (a === false || b === false) return false;
    return a == null || b == null ? null : true;
  },
  /** Three-valued OR: TRUE wins over NULL. */
  or(a: Bool, b: Bool): Bool {
    if (a === true || b === true) return true;
    return a == null || b == null ? null : false;
  },
  /** INT / INT, as in Flink: truncated, and an error on zero. */
  idiv(a: number, b: number): number {
    if (b === 0) throw new SqlRuntimeError(`SQL: division by zero (${a} / 0)`);
    return Math.trunc(a / b);
  },
  like(s: string, pattern: string): boolean {
    let re = likeCache.get(pattern);
    if (!re) {
      re = likeRegExp(pattern);
      if (likeCache.size < 1000) likeCache.set(pattern, re);
    }
    return re.test(s);
  },
  round(x: number, digits: number): number {
    const f = 10 ** digits;
    return Math.round(x * f) / f;
  },
  /** SUBSTRING(s, start[, length]) with SQL's 1-based start. */
  substring(s: string, start: number, length?: number): string {
    const from = Math.max(start - 1, 0);
    return length === undefined ? s.slice(from) : s.slice(from, Math.max(start - 1 + length, from));
  },
  /** `yyyy-MM-dd HH:mm:ss.SSS` in UTC. */
  formatTimestamp(ms: number): string {
    const d = new Date(ms);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
  },
  /** DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'): the Java pattern letters y M d H m s S. */
  dateFormat(ms: number, pattern: string): string {
    const d = new Date(ms);
    const parts: Record<string, string> = {
      yyyy: String(d.getUTCFullYear()),
      MM: pad(d.getUTCMonth() + 1),
      dd: pad(d.getUTCDate()),
      HH: pad(d.getUTCHours()),
      mm: pad(d.getUTCMinutes()),
      ss: pad(d.getUTCSeconds()),
      SSS: pad(d.getUTCMilliseconds(), 3),
    };
    return pattern.replace(/yyyy|MM|dd|HH|mm|ss|SSS/g, (p) => parts[p]!);
  },
  /** 'yyyy-MM-dd[ HH:mm:ss[.SSS]]' (UTC) to epoch milliseconds, or null when it is not one. */
  toTimestamp(s: string): number | null {
    const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$/.exec(s.trim());
    if (!m) return null;
    const ms = Date.UTC(
      +m[1]!,
      +m[2]! - 1,
      +m[3]!,
      +(m[4] ?? 0),
      +(m[5] ?? 0),
      +(m[6] ?? 0),
      +(m[7] ?? '0').padEnd(3, '0').slice(0, 3),
    );
    return Number.isNaN(ms) ? null : ms;
  },
  toTimestampOrFail(s: string): number {
    const ms = SQL_RUNTIME.toTimestamp(s);
    if (ms === null) throw new SqlRuntimeError(`SQL: CAST('${s}' AS TIMESTAMP): expected 'yyyy-MM-dd HH:mm:ss[.SSS]'`);
    return ms;
  },
  toInt(s: string): number {
    const n = Number(s.trim());
    if (!Number.isFinite(n)) throw new SqlRuntimeError(`SQL: CAST('${s}' AS INT): not a number`);
    return Math.trunc(n);
  },
  toNumber(s: string): number {
    const n = Number(s.trim());
    if (Number.isNaN(n) || s.trim() === '') throw new SqlRuntimeError(`SQL: CAST('${s}' AS DOUBLE): not a number`);
    return n;
  },
  toBoolean(s: string): boolean {
    const v = s.trim().toLowerCase();
    if (v === 'true') return true;
    if (v === 'false') return false;
    throw new SqlRuntimeError(`SQL: CAST('${s}' AS BOOLEAN): expected TRUE or FALSE`);
  },
  /** YEAR(ts), HOUR(ts), ...: a part of a UTC timestamp; DAYOFWEEK is 1 (Sunday) to 7, as in Flink. */
  datePart(ms: number, part: string): number {
    const d = new Date(ms);
    switch (part) {
      case 'YEAR':
        return d.getUTCFullYear();
      case 'QUARTER':
        return Math.floor(d.getUTCMonth() / 3) + 1;
      case 'MONTH':
        return d.getUTCMonth() + 1;
      case 'DAYOFMONTH':
        return d.getUTCDate();
      case 'DAYOFYEAR':
        return Math.floor((ms - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
      case 'DAYOFWEEK':
        return d.getUTCDay() + 1;
      case 'HOUR':
        return d.getUTCHours();
      case 'MINUTE':
        return d.getUTCMinutes();
      default:
        return d.getUTCSeconds();
    }
  },
  initcap(s: string): string {
    return s.toLowerCase().replace(/(^|[^\p{L}\p{N}])(\p{L})/gu, (_, sep: string, c: string) => sep + c.toUpperCase());
  },
  /** A regular expression from a query's text, compiled once per pattern; an invalid one fails the row as a CAST does. */
  regexp(pattern: string, flags = ''): RegExp {
    const key = `${flags}/${pattern}`;
    let re = regexpCache.get(key);
    if (!re) {
      try {
        re = new RegExp(pattern, flags);
      } catch (err) {
        throw new SqlRuntimeError(`SQL: invalid regular expression '${pattern}': ${(err as Error).message}`);
      }
      if (regexpCache.size < 1000) regexpCache.set(key, re);
    }
    re.lastIndex = 0;
    return re;
  },
  regexpExtract(s: string, pattern: string, group: number): string | null {
    const m = SQL_RUNTIME.regexp(pattern).exec(s);
    return m?.[group] ?? null;
  },
  /** LPAD/RPAD: to `length` characters, cut or filled with `fill` repeated; NULL for a negative length, as in Flink. */
  pad(s: string, length: number, fill: string, left: boolean): string | null {
    if (length < 0) return null;
    if (s.length >= length) return s.slice(0, length);
    if (fill.length === 0) return s;
    return left ? s.padStart(length, fill) : s.padEnd(length, fill);
  },
  /** CURRENT_WATERMARK: null before the first watermark. */
  watermark(ctx: { currentWatermark(): number } | undefined): number | null {
    const w = ctx?.currentWatermark() ?? -Infinity;
    return Number.isFinite(w) ? w : null;
  },
};
