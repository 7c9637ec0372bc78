/**
 * SQL aggregates as one generated AggregateFunction per GROUP BY: the accumulator is an array with a
 * slot per call (AVG takes two), so it is cheap to copy and checkpoints as plain data; every function
 * merges, so the window's pre-aggregation before the shuffle always applies.
 */
import { compileFunction, ExprWriter, propertyName } from './codegen.js';
import type { AggregateCall, Field, NamedExpr } from './logical.js';

export interface WindowRow {
  start: number;
  end: number;
}

export interface GeneratedAggregate {
  create(): unknown[];
  add(row: unknown, acc: unknown[]): unknown[];
  merge(a: unknown[], b: unknown[]): unknown[];
  result(acc: unknown[], key: unknown, window: WindowRow): Record<string, unknown>;
}

/** Where each output field comes from: a grouping key (by position), the window, or an aggregate. */
/** A grouping key's value comes from the key itself when it is the only one, else from the accumulator. */
export type OutputSource =
  | { kind: 'key'; index: number; keys: readonly NamedExpr[] }
  | { kind: 'window'; which: 'start' | 'end' | 'time' }
  | { kind: 'aggregate'; call: AggregateCall };

interface Slots {
  init: string[];
  add: string;
  merge: string;
  result: string;
}

function slotsOf(call: AggregateCall, first: number, value: string): Slots {
  const s = `a[${first}]`;
  const b = `b[${first}]`;
  if (call.distinct && call.fn !== 'MIN' && call.fn !== 'MAX') {
    // A set of the distinct values (as object keys: strings and numbers stay apart), reduced at the end.
    const reduce: Record<string, string> = {
      COUNT: `$vs.length`,
      SUM: `($vs.length === 0 ? null : $vs.reduce((x, y) => x + y, 0))`,
      AVG: `($vs.length === 0 ? null : $vs.reduce((x, y) => x + y, 0) / $vs.length)`,
    };
    return {
      init: ['{}'],
      add: `{ const $v = ${value}; if ($v != null) ${s}[(typeof $v) + ":" + $v] = $v; }`,
      merge: `Object.assign(${s}, ${b});`,
      result: `((acc) => { const $vs = Object.values(acc); return ${reduce[call.fn]}; })(${s})`,
    };
  }
  switch (call.fn) {
    case 'COUNT':
      return call.arg === undefined
        ? { init: ['0'], add: `${s}++;`, merge: `${s} += ${b};`, result: s }
        : { init: ['0'], add: `if (${value} != null) ${s}++;`, merge: `${s} += ${b};`, result: s };
    case 'SUM':
      return {
        init: ['null'],
        add: `{ const $v = ${value}; if ($v != null) ${s} = ${s} === null ? $v : ${s} + $v; }`,
        merge: `if (${b} !== null) ${s} = ${s} === null ? ${b} : ${s} + ${b};`,
        result: s,
      };
    case 'MIN':
    case 'MAX': {
      const better = call.fn === 'MIN' ? '<' : '>';
      return {
        init: ['null'],
        add: `{ const $v = ${value}; if ($v != null && (${s} === null || $v ${better} ${s})) ${s} = $v; }`,
        merge: `if (${b} !== null && (${s} === null || ${b} ${better} ${s})) ${s} = ${b};`,
        result: s,
      };
    }
    case 'AVG': {
      const n = `a[${first + 1}]`;
      return {
        init: ['0', '0'],
        add: `{ const $v = ${value}; if ($v != null) { ${s} += $v; ${n}++; } }`,
        merge: `${s} += ${b}; ${n} += b[${first + 1}];`,
        result: `(${n} === 0 ? null : ${s} / ${n})`,
      };
    }
  }
}

/** The source of the AggregateFunction for these calls over rows of `input`, producing rows of `outputs`. */
export function aggregateSource(
  calls: readonly AggregateCall[],
  input: readonly Field[],
  outputs: readonly { name: string; from: OutputSource }[],
): string {
  const w = new ExprWriter(input);
  let next = 0;
  const slots = new Map<AggregateCall, Slots>();
  for (const c of calls) {
    const s = slotsOf(c, next, c.arg ? w.gen(c.arg) : 'true');
    slots.set(c, s);
    next += s.init.length;
  }
  // A composite key is one string (cheap to hash), so the accumulator keeps the key's values for the result.
  const keyOf = outputs.find((o) => o.from.kind === 'key')?.from as Extract<OutputSource, { kind: 'key' }> | undefined;
  const keyExprs = keyOf && keyOf.keys.length > 1 ? keyOf.keys : [];
  const keySlot = next;
  for (const [i, k] of keyExprs.entries()) {
    const s = `a[${keySlot + i}]`;
    slots.set(
      { name: `$key${i}`, fn: 'COUNT', distinct: false, type: { kind: 'NULL', nullable: true } },
      {
        init: ['null'],
        add: `${s} = ${w.gen(k.expr)};`,
        merge: `if (${s} === null) ${s} = b[${keySlot + i}];`,
        result: s,
      },
    );
  }
  const all = [...slots.values()];
  const props = outputs.map(({ name, from }) => {
    const v =
      from.kind === 'key'
        ? from.keys.length === 1
          ? 'key'
          : `a[${keySlot + from.index}]`
        : from.kind === 'window'
          ? from.which === 'start'
            ? 'w.start'
            : from.which === 'end'
              ? 'w.end'
              : '(w.end - 1)'
          : slots.get(from.call)!.result;
    return `${propertyName(name)}: ${v}`;
  });
  // The writer's temporaries are declared in add(), the one function that reads rows.
  const temps = w.declarations();
  return `({
    create: () => [${all.flatMap((s) => s.init).join(', ')}],
    add: (r, a) => { ${temps}${all.map((s) => s.add).join(' ')} return a; },
    merge: (a, b) => { ${all.map((s) => s.merge).join(' ')} return a; },
    result: (a, key, w) => ({ ${props.join(', ')} }),
  })`;
}

export function compileAggregate(source: string): GeneratedAggregate {
  return compileFunction<GeneratedAggregate>(source);
}

/**
 * The key selector's source: one key expression as it is; several as one string (a number as its
 * digits, a string quoted), which hashes far cheaper than an array. For a join (`nullMatchesNothing`)
 * a key with a NULL part is null: it joins nothing; a GROUP BY groups NULLs together.
 */
export function keySource(keys: readonly NamedExpr[], input: readonly Field[], nullMatchesNothing = false): string {
  const w = new ExprWriter(input);
  if (keys.length === 0) return '() => 0';
  if (keys.length === 1) return w.fn(keys[0]!.expr);
  const parts = keys.map((k, i) => ({ v: `$k${i}`, src: w.gen(k.expr), string: w.type(k.expr).kind === 'STRING' }));
  const nulls = nullMatchesNothing ? `if (${parts.map((p) => `${p.v} == null`).join(' || ')}) return null; ` : '';
  const text = parts
    .map((p) => (p.string ? `(${p.v} == null ? "null" : JSON.stringify(${p.v}))` : `("" + ${p.v})`))
    .join(' + "|" + ');
  return `(r) => { ${w.declarations()}const ${parts.map((p) => `${p.v} = ${p.src}`).join(', ')}; ${nulls}return ${text}; }`;
}

/**
 * A GROUP BY without a window keeps one accumulator per key and updates it as rows come and go: rows
 * of an updating input (`$op` -U or -D) are taken back out. a[0] counts the group's rows; MIN, MAX and
 * the DISTINCT aggregates keep a multiset (value -> [value, count]) so a row can leave them again.
 */
export interface RetractableAggregate {
  create(): unknown[];
  add(row: unknown, acc: unknown[]): void;
  retract(row: unknown, acc: unknown[]): void;
  result(acc: unknown[], key: unknown): Record<string, unknown>;
}

function retractableSlots(call: AggregateCall, first: number, value: string): Slots & { retract: string } {
  const s = `a[${first}]`;
  const [x, y] = [`a[${first + 1}]`, `a[${first + 2}]`];
  const key = `(typeof $v) + ":" + $v`;
  if (call.fn === 'MIN' || call.fn === 'MAX' || call.distinct) {
    // A multiset (value -> [value, count]) so a value can leave again, and the figures kept beside it
    // as values enter and leave, so a result costs nothing: the extreme (rescanned only when the
    // extreme itself leaves), or the count and sum of the distinct values.
    const extreme = call.fn === 'MIN' || call.fn === 'MAX';
    const better = call.fn === 'MIN' ? '<' : '>';
    const entered = extreme ? `if (${x} === null || $v ${better} ${x}) ${x} = $v;` : `${x}++; ${y} += $v;`;
    const left = extreme
      ? `if ($v === ${x}) { ${x} = null; for (const $k2 in ${s}) { const $w = ${s}[$k2][0]; if (${x} === null || $w ${better} ${x}) ${x} = $w; } }`
      : `${x}--; ${y} -= $v;`;
    const result: Record<string, string> = {
      MIN: x,
      MAX: x,
      COUNT: x,
      SUM: `(${x} === 0 ? null : ${y})`,
      AVG: `(${x} === 0 ? null : ${y} / ${x})`,
    };
    return {
      init: extreme ? ['{}', 'null'] : ['{}', '0', '0'],
      add: `{ const $v = ${value}; if ($v != null) { const $e = ${s}[${key}]; if ($e) $e[1]++; else { ${s}[${key}] = [$v, 1]; ${entered} } } }`,
      retract: `{ const $v = ${value}; if ($v != null) { const $k = ${key}; const $e = ${s}[$k]; if ($e && --$e[1] === 0) { delete ${s}[$k]; ${left} } } }`,
      merge: '',
      result: result[call.fn]!,
    };
  }
  switch (call.fn) {
    case 'COUNT':
      return call.arg === undefined
        ? { init: ['0'], add: `${s}++;`, retract: `${s}--;`, merge: '', result: s }
        : {
            init: ['0'],
            add: `if (${value} != null) ${s}++;`,
            retract: `if (${value} != null) ${s}--;`,
            merge: '',
            result: s,
          };
    default: {
      // SUM and AVG: the sum of the non-null values and how many there are.
      const add = `{ const $v = ${value}; if ($v != null) { ${s} += $v; ${x}++; } }`;
      const retract = `{ const $v = ${value}; if ($v != null) { ${s} -= $v; ${x}--; } }`;
      return {
        init: ['0', '0'],
        add,
        retract,
        merge: '',
        result: call.fn === 'SUM' ? `(${x} === 0 ? null : ${s})` : `(${x} === 0 ? null : ${s} / ${x})`,
      };
    }
  }
}

/** The source of a RetractableAggregate over rows of `input`, producing rows of `outputs` (keys and aggregates). */
export function retractableAggregateSource(
  calls: readonly AggregateCall[],
  keys: readonly NamedExpr[],
  input: readonly Field[],
  outputs: readonly { name: string; from: OutputSource }[],
): string {
  const w = new ExprWriter(input);
  let next = 1;
  const slots = new Map<AggregateCall, Slots & { retract: string }>();
  for (const c of calls) {
    const s = retractableSlots(c, next, c.arg ? w.gen(c.arg) : 'true');
    slots.set(c, s);
    next += s.init.length;
  }
  // A composite key is one string: the accumulator keeps the key's values for the result.
  const keySlot = next;
  const keyCopies = keys.length > 1 ? keys.map((k, i) => `a[${keySlot + i}] = ${w.gen(k.expr)};`).join(' ') : '';
  const all = [...slots.values()];
  const props = outputs.map(({ name, from }) => {
    const v =
      from.kind === 'key'
        ? keys.length === 1
          ? 'key'
          : `a[${keySlot + from.index}]`
        : from.kind === 'aggregate'
          ? slots.get(from.call)!.result
          : 'null';
    return `${propertyName(name)}: ${v}`;
  });
  const temps = w.declarations();
  return `({
    create: () => [0, ${all.flatMap((s) => s.init).join(', ')}${keys.length > 1 ? `, ${keys.map(() => 'null').join(', ')}` : ''}],
    add: (r, a) => { ${temps}a[0]++; ${all.map((s) => s.add).join(' ')} ${keyCopies} },
    retract: (r, a) => { ${temps}a[0]--; ${all.map((s) => s.retract).join(' ')} },
    result: (a, key) => ({ ${props.join(', ')} }),
  })`;
}
