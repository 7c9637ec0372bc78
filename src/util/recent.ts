/** The last `capacity` numbers added, for "has this one been seen lately" (a set that forgets the oldest). */
export class RecentIds {
  private readonly ids = new Set<number>();

  constructor(private readonly capacity: number) {}

  add(id: number): void {
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }
}
