/** Shared test helpers: run a build function as a job, and check nothing is left running. */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeyGroupRange } from '../src/plan/index.js';
import { KeyedStateBackend } from '../src/state/index.js';
import { defineJob, runJob, type JobEnvironment, type LocalRunOptions } from '../src/index.js';

export async function collect<T = unknown>(
  build: (env: JobEnvironment) => void,
  options: LocalRunOptions = {},
  name = 'default',
): Promise<T[]> {
  const result = await runJob(defineJob({ name: 'test-job', version: '1' }, build), options);
  return (result.collected[name] ?? []) as T[];
}

/** A stable order for comparing results whose order across subtasks is not defined. */
export function sortBy<T>(rows: T[], key: (r: T) => string | number = (r) => JSON.stringify(r)): T[] {
  return [...rows].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** Handles (timers, sockets, files) that are open now, by type, ignoring stdio. */
export function activeResources(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((r) => r !== 'TTYWrap' && r !== 'PipeWrap')
    .sort();
}

function countByType(list: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of list) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

/** Assert that running `fn` leaves no handle of any type open beyond what was open before it. */
export async function assertNoLeaks(fn: () => Promise<void>): Promise<void> {
  const before = countByType(activeResources());
  await fn();
  // Give closed handles one turn of the event loop to be released.
  await new Promise((r) => setImmediate(r));
  const extra = [...countByType(activeResources())].filter(([type, n]) => n > (before.get(type) ?? 0));
  assert.deepEqual(extra, [], 'resources left open after the job');
}

/** The lines the file sink made visible under `dir` (committed part files), sorted. */
export async function visibleLines(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => /^part-\d+-\d+\.jsonl$/.test(n));
  return (await Promise.all(names.map((n) => readFile(join(dir, n), 'utf8'))))
    .flatMap((t) => t.split('\n').filter(Boolean))
    .sort();
}

/** A flag's line in --help, matched word by word: help wraps its text where the terminal width says. */
export function helpLine(flag: string, text: string): RegExp {
  const words = (t: string): string =>
    t
      .split(/\s+/)
      .map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('\\s+');
  return new RegExp(`${words(flag)}\\s+${words(text)}`);
}

/**
 * The time one chaos scenario (real processes, kills, restarts) may take on two busy cores. Node 20's
 * --test-timeout bounds a file as a whole, so each scenario carries its own bound and a hang names it.
 */
export const SCENARIO = { timeout: 180_000 } as const;

/** How many rows an index-space source (datagen, nexmark) had read at this position (connectors/index-space.ts). */
export function rowsRead(position: unknown): number {
  const p = position as { from: number; next: number[] };
  return p.next.reduce((n, r, k) => n + (r - (p.from + k)) / 128, 0);
}

/**
 * How long a test waits for something that should happen, set once: what has not happened in two
 * minutes is a failure, not a slow machine (CI shares two cores with everything else). Waits that prove
 * something does NOT happen, or that measure, pass their own bound.
 */
export const PATIENCE_MS = 120_000;

/** Poll `check` until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = PATIENCE_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A port on 127.0.0.1 something is listening on (and accepting nothing of use), until `close()`. */
export async function heldPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * Keyed state backends of each type, for tests that hold for both: `make` builds one (disk ones under a
 * directory of their own) and `closeAll` closes every one it built and removes that directory.
 */
export function stateBackends(): {
  make(type: 'heap' | 'disk', options?: StateBackendTestOptions): KeyedStateBackend;
  closeAll(): Promise<void>;
} {
  const root = mkdtempSync(join(tmpdir(), 'clink-state-test-'));
  const made: KeyedStateBackend[] = [];
  return {
    make(type, o = {}) {
      const b = new KeyedStateBackend(
        o.range ?? KeyGroupRange.forSubtask(0, 1),
        o.operator ?? 'op',
        undefined,
        o.now,
        o.ttlNow,
        type === 'disk' ? { localDir: root, cacheEntries: o.cacheEntries ?? 16 } : undefined,
      );
      made.push(b);
      return b;
    },
    async closeAll() {
      for (const b of made.splice(0)) await b.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface StateBackendTestOptions {
  range?: KeyGroupRange;
  operator?: string;
  /** The clock encoding and restore slices are timed by. */
  now?: () => number;
  /** The TTL clock. */
  ttlNow?: () => number;
  /** The disk backend's cache per state. @default 16, so that tests go through the store */
  cacheEntries?: number;
}
