/**
 * A source whose input a test writes out, with markers where the test acts (after Bytewax's testing
 * source and its EOF()/ABORT() items): at PAUSE every subtask stops reading (it keeps its loop turning,
 * so barriers pass) until the test releases it, which places a checkpoint at a known point in the input
 * without sleeping. Records are dealt to subtasks in turn; a marker applies to each. Its position is the
 * number of records before its next item, so a run restored from it may list the same records with
 * other markers (or none) and resumes exactly.
 */
import { defineConnector, type Connector } from '../../src/index.js';
import { deferred } from '../../src/util/index.js';

export const PAUSE: unique symbol = Symbol('PAUSE');
export type TestingItem<T> = T | typeof PAUSE;

export interface TestingSource<T> {
  connector: Connector<T, never>;
  /** Resolves once every subtask of the last run has read up to the pause it is at. */
  paused(): Promise<void>;
  /** Let every subtask read on past the pause. */
  release(): void;
}

export function testingSource<T>(name: string, items: readonly TestingItem<T>[]): TestingSource<T> {
  let gate = deferred<void>();
  let allPaused = deferred<void>();
  const pausedAt = new Set<number>();
  const connector = defineConnector<T, never>({
    name,
    parallelSource: true,
    source: {
      createReader: (_options, ctx) => {
        let next = 0;
        /** The record among all items that item `i` is (its turn decides the subtask), or -1 for a marker. */
        const turns: number[] = [];
        let n = 0;
        for (const item of items) turns.push(item === PAUSE ? -1 : n++);
        return {
          read: async (out, maxRecords) => {
            let emitted = 0;
            while (next < items.length && emitted < maxRecords) {
              const item = items[next]!;
              if (item === PAUSE) {
                pausedAt.add(ctx.subtaskIndex);
                if (pausedAt.size === ctx.parallelism) allPaused.resolve();
                // A turn of the loop, then read again: the task checks for barriers between reads.
                const released = await Promise.race([
                  gate.promise.then(() => true),
                  new Promise<false>((r) => setTimeout(() => r(false), 1)),
                ]);
                if (!released) return 'MORE';
                next++;
                continue;
              }
              if (turns[next]! % ctx.parallelism === ctx.subtaskIndex) {
                out.collect(item);
                emitted++;
              }
              next++;
            }
            return next < items.length ? 'MORE' : 'END';
          },
          snapshot: () => (next < items.length ? (turns.slice(next).find((t) => t >= 0) ?? n) : n),
          restore: (position) => {
            const at = turns.indexOf(position as number);
            next = at >= 0 ? at : items.length;
          },
        };
      },
    },
  });
  return {
    connector,
    paused: () => allPaused.promise,
    release: () => {
      gate.resolve();
      gate = deferred<void>();
      allPaused = deferred<void>();
      pausedAt.clear();
    },
  };
}
