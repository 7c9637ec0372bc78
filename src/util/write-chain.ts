/**
 * Writes of one record, one at a time: a write asked for while one is out runs after it (reading the
 * record as it then is), so the last write to land is the newest. A failed write is reported and the
 * chain goes on.
 */
export class WriteChain {
  private tail: Promise<void> | undefined;

  /** Run `write` after every write asked for before it; `failed` hears its error. */
  then(write: () => Promise<void>, failed: (err: unknown) => void): void {
    const next: Promise<void> = (this.tail ?? Promise.resolve())
      .then(write)
      .catch(failed)
      .finally(() => {
        if (this.tail === next) this.tail = undefined;
      });
    this.tail = next;
  }

  /** Settles when every write asked for so far has (undefined: none is out). */
  get settled(): Promise<void> | undefined {
    return this.tail;
  }
}
