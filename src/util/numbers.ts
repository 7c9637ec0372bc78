/** What typed columns can hold of a number, decided once for every codec that narrows numbers. */

/** A 32-bit integer that an Int32Array holds as it is: not -0, which it would make 0. */
export const isInt32 = (x: number): boolean => (x | 0) === x && (x !== 0 || 1 / x > 0);

/** The same number, bit for bit as a double reads back: 0 and -0 are two, NaN is never the same. */
export const sameNumber = (a: number, b: number): boolean => a === b && (a !== 0 || 1 / a === 1 / b);
