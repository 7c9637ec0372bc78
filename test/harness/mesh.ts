/** Mesh run members (`clink run --lead/--join`) as real processes, watched through what they print. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { BIN, TSX, type CliRun } from './cli.js';

export interface Member {
  child: ChildProcess;
  /** Settles with the exit code and everything printed. */
  exited: Promise<CliRun>;
  stderr(): string;
  /** Resolves with the first match of `re` in standard error (waiting for it to appear), or rejects at the deadline. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): void;
}

/** Start `clink run <args>` (a member), with its own job cache under `cwd`; killed at `timeoutMs`. */
export function startMember(args: string[], cwd: string, timeoutMs = 120_000): Member {
  const child = spawn(process.execPath, ['--import', TSX, BIN, 'run', ...args], {
    cwd,
    env: { ...process.env, CLINK_CACHE_DIR: join(cwd, '.cache'), CLINK_LOG_LEVEL: 'info' },
  });
  let stdout = '';
  let stderr = '';
  const watchers = new Set<() => void>();
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    for (const w of [...watchers]) w();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise<CliRun>((res, rej) => {
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      for (const w of [...watchers]) w();
      res({ code, stdout, stderr });
    });
  });
  return {
    child,
    exited,
    stderr: () => stderr,
    waitFor: (re, ms = 60_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = re.exec(stderr);
          if (m) done(() => resolve(m));
          else if (child.exitCode !== null || child.signalCode !== null)
            done(() =>
              reject(
                new Error(`member exited (${child.exitCode ?? child.signalCode}) before printing ${re}:\n${stderr}`),
              ),
            );
        };
        const deadline = setTimeout(() => done(() => reject(new Error(`no ${re} within ${ms} ms:\n${stderr}`))), ms);
        const done = (f: () => void): void => {
          clearTimeout(deadline);
          watchers.delete(check);
          f();
        };
        watchers.add(check);
        check();
      }),
    kill: (signal = 'SIGKILL') => child.kill(signal),
  };
}

/** The leader's control port, from its log line. */
export async function controlPort(leader: Member): Promise<number> {
  return Number((await leader.waitFor(/members register at port (\d+)/))[1]);
}

/** Free TCP ports on 127.0.0.1 (bound and released: a restarted member must come back at the same address). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve) => {
          const s = createServer();
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
