/**
 * The job modules a coordinator holds, by SHA-256: what a submit uploaded (verified against its hash),
 * reused by a later submit that sends the hash alone, and shipped to each worker session once (a
 * reference after that). Bounded: past MODULE_CACHE_ENTRIES the least recently used module no running
 * job needs is dropped.
 */
import { createHash } from 'node:crypto';
import { ClinkError } from '../errors.js';
import type { ClinkMetrics } from '../metrics/index.js';
import type { MessageOf } from '../protocol/index.js';
import type { CachedModule, WorkerSession } from './job-state.js';

/** Job modules held; the oldest not in use is dropped past this many. */
export const MODULE_CACHE_ENTRIES = 64;

type ModuleEntry = MessageOf<'SubmitJob'>['modules'][number];

export class ModuleCache {
  private readonly modules = new Map<string, CachedModule>();

  constructor(private readonly metrics: ClinkMetrics) {}

  get(sha256: string): CachedModule | undefined {
    return this.modules.get(sha256);
  }

  /** Store modules that came with bytes; return the hashes referred to but not held. `inUse`: modules of running jobs, never dropped. */
  resolve(entries: readonly ModuleEntry[], inUse: () => ReadonlySet<string>): string[] {
    const missing: string[] = [];
    for (const mod of entries) {
      if (mod.bytes.length > 0) {
        const sha = createHash('sha256').update(mod.bytes).digest('hex');
        if (sha !== mod.sha256)
          throw new ClinkError(
            'CLINK_ERR_JOB_LOAD',
            `job module bytes hash to ${sha}, not the ${mod.sha256} they were sent as`,
          );
        this.metrics.submitPluginBytesReceived.inc(mod.bytes.length + mod.sourceMap.length);
        this.put({ sha256: mod.sha256, bytes: mod.bytes, sourceMap: mod.sourceMap }, inUse());
      } else if (this.modules.has(mod.sha256)) {
        this.metrics.submitPluginCacheHits.inc();
        const held = this.modules.get(mod.sha256)!;
        this.modules.delete(mod.sha256);
        this.modules.set(mod.sha256, held); // most recently used last
      } else missing.push(mod.sha256);
    }
    return missing;
  }

  private put(mod: CachedModule, inUse: ReadonlySet<string>): void {
    this.modules.delete(mod.sha256);
    this.modules.set(mod.sha256, mod);
    for (const sha of this.modules.keys()) {
      if (this.modules.size <= MODULE_CACHE_ENTRIES) break;
      if (!inUse.has(sha)) this.modules.delete(sha);
    }
  }

  /** The module entry of a Deploy to `s`: the bytes the first time this session gets them, a reference after. */
  forDeploy(s: WorkerSession, mod: CachedModule): MessageOf<'Deploy'>['modules'][number] {
    if (s.shippedModules.has(mod.sha256)) {
      this.metrics.pluginShipsDeduped.inc();
      return { sha256: mod.sha256, bytes: new Uint8Array(0), sourceMap: new Uint8Array(0) };
    }
    s.shippedModules.add(mod.sha256);
    this.metrics.pluginBytesShipped.inc(mod.bytes.length + mod.sourceMap.length);
    return { sha256: mod.sha256, bytes: mod.bytes, sourceMap: mod.sourceMap };
  }
}
