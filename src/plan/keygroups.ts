/**
 * Key groups: the unit of keyed-state partitioning. A key hashes (MurmurHash3, x86 32-bit, computed over
 * the key's canonical form) to one of MAX_PARALLELISM key groups; a subtask owns a contiguous range.
 * The hash is pure arithmetic on JS strings and numbers, so it is identical in every process.
 */
export const MAX_PARALLELISM = 128;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

function mixH(h: number, k: number): number {
  h ^= mixK(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function fmix(h: number, length: number): number {
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** MurmurHash3 over the UTF-16 code units of `s`, two units per 32-bit block. */
export function murmurString(s: string, seed = 0): number {
  let h = seed | 0;
  const n = s.length;
  let i = 0;
  for (; i + 1 < n; i += 2) h = mixH(h, s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) h ^= mixK(s.charCodeAt(i));
  return fmix(h, n * 2);
}

/** MurmurHash3 of one 32-bit integer. */
export function murmurInt(v: number, seed = 0): number {
  return fmix(mixH(seed | 0, v | 0), 4);
}

const OBJECT_KEY_PREFIX = '\u0001';

/**
 * The form of a key used for hashing and as a Map key: primitives stand for themselves; arrays and
 * objects become a canonical JSON string (sorted object keys), so `[1, 'a']` from two records is one key.
 */
export function normalizeKey(key: unknown): unknown {
  const t = typeof key;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'bigint' || key === null || key === undefined)
    return key;
  return OBJECT_KEY_PREFIX + canonicalJson(key);
}

/** A normalized key that stands for an object or array key (whose original cannot be read back from it). */
export function isObjectKey(normalizedKey: unknown): boolean {
  return typeof normalizedKey === 'string' && normalizedKey.startsWith(OBJECT_KEY_PREFIX);
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']';
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (typeof v === 'bigint') return v.toString() + 'n';
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return (
      '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson((v as Record<string, unknown>)[k])).join(',') + '}'
    );
  }
  return JSON.stringify(v) ?? 'undefined';
}

/** The 32-bit hash of a normalized key. */
export function hashNormalizedKey(nk: unknown): number {
  switch (typeof nk) {
    case 'string':
      return murmurString(nk);
    case 'number':
      return Number.isInteger(nk) && nk >= -0x80000000 && nk <= 0x7fffffff
        ? murmurInt(nk)
        : murmurString(String(nk), 1);
    case 'boolean':
      return murmurInt(nk ? 1 : 0, 2);
    case 'bigint':
      return murmurString(nk.toString(), 3);
    default:
      return murmurString(String(nk), 4);
  }
}

/** The key group (0..maxParallelism-1) of a normalized key. */
export function keyGroupOf(normalizedKey: unknown, maxParallelism = MAX_PARALLELISM): number {
  return hashNormalizedKey(normalizedKey) % maxParallelism;
}

/** Which of `parallelism` subtasks owns `keyGroup` (Flink's formula, so ranges are contiguous). */
export function operatorIndexForKeyGroup(
  keyGroup: number,
  parallelism: number,
  maxParallelism = MAX_PARALLELISM,
): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** A contiguous, inclusive range of key groups owned by one subtask. */
export class KeyGroupRange {
  constructor(
    readonly start: number,
    readonly end: number,
  ) {}

  static forSubtask(index: number, parallelism: number, maxParallelism = MAX_PARALLELISM): KeyGroupRange {
    const start = Math.ceil((index * maxParallelism) / parallelism);
    const end = Math.ceil(((index + 1) * maxParallelism) / parallelism) - 1;
    return new KeyGroupRange(start, end);
  }

  contains(keyGroup: number): boolean {
    return keyGroup >= this.start && keyGroup <= this.end;
  }

  get size(): number {
    return Math.max(0, this.end - this.start + 1);
  }

  toString(): string {
    return `KeyGroupRange[${this.start}..${this.end}]`;
  }
}
