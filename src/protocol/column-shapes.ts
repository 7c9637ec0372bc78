/**
 * Record shapes for columnar batches (columns.ts, design record 018): a field list, and the code
 * generated for it once, so every read and write of a field is a property access at a site that sees
 * one hidden class. Names enter generated code only as JSON string literals, tuple positions as integers.
 */

/** What a pass over a field's values finds: every value a number (all 32-bit integers, -0 aside, or not; or one number throughout); or not all numbers. */
export const Kind = { Ints: 0, Numbers: 1, Mixed: 4, Constant: 5 } as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** More fields than this is not a record shape worth a schema. */
export const MAX_FIELDS = 256;

export interface Shape {
  /** Its records are arrays of names.length values (the names are their positions; none is written). */
  tuple: boolean;
  names: string[];
  /** Each name's UTF-8, as the batch writes it (made once per shape, not per batch). */
  nameBytes: Buffer[];
  /**
   * One pass over a batch: whether every value has exactly these own enumerable fields in this order
   * (a tuple: is a plain array of this length); and per field, when every value of it is a number, the
   * numbers in `into[i]` and their kind in `kinds[i]` (Mixed otherwise). `constants`: look for a field of
   * one number throughout.
   */
  scan: (values: readonly unknown[], into: Float64Array[], kinds: Kind[], constants: boolean) => boolean;
  /** The values of field i of every record. */
  column: (values: readonly unknown[], i: number) => unknown[];
  /**
   * The code that makes a batch's records from its columns, for one set of constant columns: a column
   * marked constant is its value itself (no array of it), any other is indexable by row.
   */
  rows: (constant: readonly boolean[]) => Rows;
}

/** The `count` records (or tuples) of a batch from its columns. */
export type Rows = (cols: readonly unknown[], count: number) => unknown[];

/** Row makers kept per shape, one per set of constant columns seen (a stream has one or two). */
const MAX_ROWS_PER_SHAPE = 32;

/** Shapes seen, by their field list joined: few per job, so the cache stays small; bounded anyway. */
const shapes = new Map<string, Shape>();
const MAX_SHAPES = 1024;
const EMPTY = Buffer.alloc(0);

export function shapeOf(names: string[]): Shape {
  const key = names.join('\u0000');
  let s = shapes.get(key);
  if (s) return s;
  s = makeShape(names, false);
  if (shapes.size >= MAX_SHAPES) shapes.clear();
  shapes.set(key, s);
  return s;
}

/** Tuple shapes, by length (at most MAX_FIELDS of them). */
const tupleShapes: Shape[] = [];

export function tupleShapeOf(length: number): Shape {
  return (tupleShapes[length] ??= makeShape(
    Array.from({ length }, (_, i) => String(i)),
    true,
  ));
}

/** The shape of a batch's first value when it can be columnar (a tuple only when `tuples`); undefined otherwise. */
export function firstShape(v: unknown, tuples: boolean): Shape | undefined {
  if (Array.isArray(v))
    return tuples && v.length > 0 && v.length <= MAX_FIELDS && Object.getPrototypeOf(v) === Array.prototype
      ? tupleShapeOf(v.length)
      : undefined;
  if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype) return undefined;
  const names = Object.keys(v);
  // `__proto__` as an own field would set the prototype when rebuilt by a literal.
  if (names.length === 0 || names.length > MAX_FIELDS || names.includes('__proto__')) return undefined;
  return shapeOf(names);
}

function makeShape(names: string[], tuple: boolean): Shape {
  const lit = names.map((n) => (tuple ? n : JSON.stringify(n)));
  const f = lit.length;
  // The record check: a tuple is a plain array of f values; a record has exactly these fields, in order
  // (for-in over a fast object walks its enum cache; no array of keys is made).
  const check = tuple
    ? `if (!Array.isArray(v) || v.length !== ${f} || getPrototypeOf(v) !== proto) return false;`
    : `if (typeof v !== 'object' || v === null || getPrototypeOf(v) !== proto) return false;
       let i = 0;
       for (const k in v) {
         switch (i++) {${lit.map((l, i) => `case ${i}: if (k !== ${l}) return false; break;`).join(' ')}
           default: return false;
         }
       }
       if (i !== ${f}) return false;`;
  // Per field: still all numbers, all 32-bit integers (-0 is not one: x | 0 is +0), one number throughout
  // bit for bit (NaN never is; 0 and -0 are two). The numbers go straight into a Float64Array (a typed
  // column is then a typed-array copy; set from a JS array of mixed element kinds it takes V8's slow
  // path, ~20 ns a value).
  const fields = lit.map((_, i) => i);
  const scan = new Function(
    'getPrototypeOf',
    'proto',
    'K',
    `return function (values, into, kinds, constants) {
      const n = values.length;
      const v0 = values[0];
      ${fields.map((i) => `const first${i} = v0[${lit[i]}], c${i} = into[${i}]; let num${i} = typeof first${i} === 'number', int${i} = true, same${i} = constants;`).join('\n')}
      for (let j = 0; j < n; j++) {
        const v = values[j];
        ${check}
        ${fields
          .map(
            (i) => `if (num${i}) {
          const x = v[${lit[i]}];
          if (typeof x !== 'number') num${i} = false;
          else {
            c${i}[j] = x;
            if (int${i} && ((x | 0) !== x || (x === 0 && 1 / x < 0))) int${i} = false;
            if (same${i} && (x !== first${i} || (x === 0 && 1 / x !== 1 / first${i}))) same${i} = false;
          }
        }`,
          )
          .join('\n')}
      }
      // A constant (8 bytes, padded to 8) only where it is smaller than the column: 4 integers or 2 doubles.
      ${fields.map((i) => `kinds[${i}] = !num${i} ? K.Mixed : same${i} && n >= (int${i} ? 4 : 2) ? K.Constant : int${i} ? K.Ints : K.Numbers;`).join('\n')}
      return true;
    }`,
  )(Object.getPrototypeOf, tuple ? Array.prototype : Object.prototype, Kind) as Shape['scan'];
  const column = new Function(
    'values',
    'i',
    `const n = values.length; const out = new Array(n);
    switch (i) {${lit.map((l, i) => `case ${i}: for (let j = 0; j < n; j++) out[j] = values[j][${l}]; break;`).join(' ')}}
    return out;`,
  ) as Shape['column'];
  // One loop per batch (not a call per record), each column read at a site of its own, a constant not read at all.
  const rowMakers = new Map<string, Rows>();
  const rows = (constant: readonly boolean[]): Rows => {
    const key = constant.map((c) => (c ? '1' : '0')).join('');
    let r = rowMakers.get(key);
    if (r) return r;
    const value = (i: number): string => (constant[i] ? `c${i}` : `c${i}[j]`);
    r = new Function(
      'cols',
      'n',
      `${fields.map((i) => `const c${i} = cols[${i}];`).join(' ')}
      const out = new Array(n);
      for (let j = 0; j < n; j++) out[j] = ${tuple ? `[${fields.map(value).join(', ')}]` : `{ ${lit.map((l, i) => `${l}: ${value(i)}`).join(', ')} }`};
      return out;`,
    ) as Rows;
    if (rowMakers.size >= MAX_ROWS_PER_SHAPE) rowMakers.clear();
    rowMakers.set(key, r);
    return r;
  };
  return { tuple, names, nameBytes: names.map((n) => (tuple ? EMPTY : Buffer.from(n, 'utf8'))), scan, column, rows };
}
