/**
 * The partials of one pane of a window pre-aggregation whose accumulator is a number (a count) and whose
 * keys are 32-bit integers: keys, accumulators and latest timestamps in typed arrays, in the order the
 * keys first came (a partial leaves in that order, as from a Map), found through an open-addressing
 * index. An update allocates nothing, and a table is reset and reused for the next pane, so a hot
 * pre-aggregation makes no objects that live until its pane completes (a `{ key, acc, timestamp }` and a
 * Map entry per key and pane did: medium-lived objects, the dearest kind for the young generation).
 */

const INITIAL_CAPACITY = 64;

export class NumberPartials {
  keys = new Int32Array(INITIAL_CAPACITY);
  accs = new Float64Array(INITIAL_CAPACITY);
  stamps = new Float64Array(INITIAL_CAPACITY);
  /** Entries held, at 0 .. size - 1. */
  size = 0;
  /** Per slot, the entry's index + 1 (0: empty); twice the entries' capacity, so probing stays short. */
  private index = new Int32Array(2 * INITIAL_CAPACITY);
  private shift = 32 - Math.log2(2 * INITIAL_CAPACITY);

  /** The entry of `key`, or -1. */
  find(key: number): number {
    const index = this.index;
    const mask = index.length - 1;
    for (let slot = Math.imul(key, 0x9e3779b1) >>> this.shift; ; slot = (slot + 1) & mask) {
      const e = index[slot]! - 1;
      if (e < 0 || this.keys[e] === key) return e;
    }
  }

  /** A new entry for `key` (not held), holding `acc` at `timestamp`; returns its index. */
  append(key: number, acc: number, timestamp: number): number {
    if (this.size === this.keys.length) this.grow();
    const e = this.size++;
    this.keys[e] = key;
    this.accs[e] = acc;
    this.stamps[e] = timestamp;
    this.place(key, e);
    return e;
  }

  /** Forget every entry, keeping the memory for the next pane. */
  reset(): void {
    if (this.size === 0) return;
    this.index.fill(0);
    this.size = 0;
  }

  private place(key: number, e: number): void {
    const index = this.index;
    const mask = index.length - 1;
    let slot = Math.imul(key, 0x9e3779b1) >>> this.shift;
    while (index[slot] !== 0) slot = (slot + 1) & mask;
    index[slot] = e + 1;
  }

  private grow(): void {
    const capacity = 2 * this.keys.length;
    const keys = new Int32Array(capacity);
    keys.set(this.keys);
    const accs = new Float64Array(capacity);
    accs.set(this.accs);
    const stamps = new Float64Array(capacity);
    stamps.set(this.stamps);
    this.keys = keys;
    this.accs = accs;
    this.stamps = stamps;
    this.index = new Int32Array(2 * capacity);
    this.shift--;
    for (let e = 0; e < this.size; e++) this.place(keys[e]!, e);
  }
}
