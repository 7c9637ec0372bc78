/** Parsers of one text value (a flag's, a query parameter's): each returns it or throws saying what was expected. */

/** A parser of one value: returns it, or throws an Error whose message says what was expected. */
export type ValueParser<T> = (text: string) => T;

export const wholeNumber =
  (min: number): ValueParser<number> =>
  (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isInteger(n) || n < min)
      throw new Error(`expected a whole number >= ${min}, got '${v}'`);
    return n;
  };

export const oneOf =
  <T extends string>(choices: readonly T[]): ValueParser<T> =>
  (v) => {
    if (!(choices as readonly string[]).includes(v))
      throw new Error(`expected one of ${choices.join(', ')}, got '${v}'`);
    return v as T;
  };

export const booleanText: ValueParser<boolean> = (v) => {
  if (v === '' || v === 'true') return true;
  if (v === 'false') return false;
  throw new Error(`expected true or false, got '${v}'`);
};

/** `key=value`, as --param and the `param` query parameter take it. */
export const keyValue: ValueParser<[string, string]> = (v) => {
  const i = v.indexOf('=');
  if (i <= 0) throw new Error(`expected key=value, got '${v}'`);
  return [v.slice(0, i), v.slice(i + 1)];
};

/** `min..max`, two whole numbers with 1 <= min <= max (--autoscale and the `autoscale` query parameter). */
export const bounds: ValueParser<{ min: number; max: number }> = (v) => {
  const m = /^(\d+)\.\.(\d+)$/.exec(v.trim());
  if (!m) throw new Error(`expected min..max (two whole numbers, as 2..8), got '${v}'`);
  const [min, max] = [Number(m[1]), Number(m[2])];
  if (min < 1 || min > max) throw new Error(`expected 1 <= min <= max, got ${min}..${max}`);
  return { min, max };
};

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  milli: 1,
  millis: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  min: 60_000,
  m: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

/** A duration as Flink's configuration writes one (`10 s`, `500ms`, `1 min`; a bare number is milliseconds), in ms. */
export const flinkDuration: ValueParser<number> = (v) => {
  const m = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(v);
  const unit = DURATION_UNITS[(m?.[2] ?? '').toLowerCase() || 'ms'];
  if (!m || unit === undefined)
    throw new Error(`expected a duration such as 500 ms, 10 s or 1 min (a bare number is milliseconds), got '${v}'`);
  return Number(m[1]) * unit;
};
