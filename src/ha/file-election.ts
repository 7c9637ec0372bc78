/**
 * File election (`--ha-dir DIR`): the leader is whoever holds the exclusive OS lock on
 * `DIR/leader.lock`, taken by a helper process (lock-holder.ts) that asks every 200 ms. The kernel
 * releases the lock when the holder dies, so a standby takes over when the leader's process does.
 *
 * Epochs: on election the new leader writes `DIR/epoch.json` one above the highest epoch on record
 * (fenced), then `DIR/active-leader.json` (host, port, epoch, time) once it listens. Both are fenced
 * records, so a superseded leader's late write is refused.
 *
 * At start the directory's locks are proved, not assumed: a lock held here is asked for from another
 * process; a directory that grants it twice (a bind mount, 9p or virtiofs, NFS mounted nolock) would
 * let two coordinators lead at once, and is refused unless --ha-allow-unsafe-locks.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { EnvironmentError } from '../errors.js';
import type { Logger } from '../log/index.js';
import { ElectionBase, nodeName, type LeaderElection, type LeaderInfo } from './election.js';
import { tryLock } from './file-lock.js';
import { fencedWrite, readRecord } from './fenced-store.js';
import { LockHolder, lockGrantedToAnotherProcess } from './lock-holder.js';
import { makeDirectory } from '../util/index.js';

export const DEFAULT_LOCK_POLL_MS = 200;

export interface FileElectionOptions {
  dir: string;
  /** The host this node advertises (for its leader record). */
  host: string;
  log: Logger;
  /** @default 200 */
  pollMs?: number;
  /** Stand even where the lock probe says two processes can hold one lock (warns). */
  allowUnsafeLocks?: boolean;
  /** How the directory's locks are proved. @default probeLocks (this host's filesystems all honour them: tests inject a failing one) */
  probe?: (dir: string) => Promise<string | undefined>;
}

export const leaderFile = (dir: string): string => join(dir, 'active-leader.json');
const epochFile = (dir: string): string => join(dir, 'epoch.json');

/** The leader announced in `dir`, if any. */
export async function readLeader(dir: string): Promise<LeaderInfo | undefined> {
  const r = await readRecord<LeaderInfo>(leaderFile(dir)).catch(() => undefined);
  return r && r.port > 0 ? r : undefined;
}

/**
 * Prove that `dir` honours locks between processes: hold one here and ask for it from a child. Returns
 * undefined when it does (or the probe is inconclusive: another node holds the probe lock), else why not.
 */
export async function probeLocks(dir: string): Promise<string | undefined> {
  const path = join(dir, 'lock-probe.lock');
  const fh = await open(path, 'a');
  try {
    if (!(await tryLock(fh.fd))) return undefined;
    if (!(await lockGrantedToAnotherProcess(path))) return undefined;
    return `the HA directory ${dir} granted one lock to two processes: its filesystem does not honour POSIX locks (a bind mount, a 9p or virtiofs share, NFS mounted nolock?), so two coordinators could lead at once`;
  } finally {
    await fh.close();
  }
}

export class FileElection extends ElectionBase implements LeaderElection {
  private holder: LockHolder | undefined;

  constructor(private readonly options: FileElectionOptions) {
    super(options.log);
  }

  async start(): Promise<void> {
    const { dir, log } = this.options;
    try {
      await makeDirectory(dir);
    } catch (err) {
      throw new EnvironmentError(`cannot use the HA directory ${dir} (--ha-dir): ${(err as Error).message}`, {
        cause: err,
      });
    }
    const unsafe = await (this.options.probe ?? probeLocks)(dir);
    if (unsafe && !this.options.allowUnsafeLocks)
      throw new EnvironmentError(
        `${unsafe}; put --ha-dir on a filesystem that honours locks, or pass --ha-allow-unsafe-locks to stand anyway`,
      );
    if (unsafe) log.warn(`${unsafe}; standing anyway (--ha-allow-unsafe-locks)`);
    const holder = (this.holder = LockHolder.spawn(
      join(dir, 'leader.lock'),
      this.options.pollMs ?? DEFAULT_LOCK_POLL_MS,
    ));
    log.info({ lockHolderPid: holder.pid }, `standing for leadership in ${dir} (lock holder process ${holder.pid})`);
    void holder.acquired.then(
      () =>
        this.elected().catch((err: unknown) => {
          // Elected, but the epoch could not be recorded (a full or read-only disk): not a leader.
          log.error({ err }, `could not take leadership in ${dir}: ${(err as Error).message}`);
          this.lost(`could not take leadership: ${(err as Error).message}`, { quietly: true });
        }),
      () => undefined,
    );
    void holder.ended.then((end) => this.lost(end.detail, { where: `in ${dir}` }));
  }

  private async elected(): Promise<void> {
    if (this.closed) return;
    const { dir } = this.options;
    const [e, l] = await Promise.all([readRecord<object>(epochFile(dir)), readRecord<object>(leaderFile(dir))]);
    const epoch = Math.max(e?.epoch ?? 0, l?.epoch ?? 0) + 1;
    await fencedWrite(epochFile(dir), epoch, { node: nodeName(this.options.host), at: Date.now() });
    await this.won(epoch, dir);
  }

  async announce(info: Omit<LeaderInfo, 'epoch' | 'at' | 'node'>): Promise<void> {
    if (!this.leading) throw new Error('only a leader announces itself');
    await fencedWrite(leaderFile(this.options.dir), this.epoch, {
      ...info,
      at: Date.now(),
      node: nodeName(this.options.host),
    });
  }

  currentLeader(): Promise<LeaderInfo | undefined> {
    return readLeader(this.options.dir);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.leading = false;
    await this.holder?.release();
  }
}
