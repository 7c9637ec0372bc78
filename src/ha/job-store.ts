/**
 * What a leader persists so a successor can take its jobs over (under the HA directory):
 *
 *   jobs/<id>/manifest.json   each running job as submitted (fenced by epoch)
 *   modules/<sha256>.mjs      its job module (and .map), content-addressed, written before the manifest
 *   history/<id>.json         each ended job as the API showed it (fenced by epoch)
 *
 * Every record carries the epoch of the leader that wrote it, and a write or removal from a lower epoch
 * than the one stored is refused (fenced-store.ts).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { MessageOf } from '../protocol/index.js';
import { writeFileDurably, makeDirectory } from '../util/index.js';
import { fencedRemove, fencedWrite, readRecord } from './fenced-store.js';

/** A running job as its submit asked for it: enough to submit it again. */
export interface JobManifest {
  jobId: string;
  jobName: string;
  specJson: string;
  params: string;
  buildParallelism: number;
  /** The autoscaler's bounds, when it was submitted with --autoscale. */
  autoscale?: { min: number; max: number };
  checkpoint: MessageOf<'SubmitJob'>['checkpoint'];
  moduleSha256: string;
  submittedAt: number;
}

/** An ended job, as the API showed it when it ended. */
export type HistoryRecord = Record<string, unknown> & { jobId: string; finishedAt?: number };

export class HaJobStore {
  constructor(
    readonly dir: string,
    /** The epoch of the leader writing (fences every write). */
    readonly epoch: number,
  ) {}

  private manifestPath(jobId: string): string {
    return join(this.dir, 'jobs', jobId, 'manifest.json');
  }

  private modulePath(sha256: string, ext: 'mjs' | 'map'): string {
    return join(this.dir, 'modules', `${sha256}.${ext}`);
  }

  /** Persist a submitted job: its module first (if not already there), then its manifest. */
  async persist(manifest: JobManifest, module: { bytes: Uint8Array; sourceMap: Uint8Array }): Promise<void> {
    await makeDirectory(join(this.dir, 'modules'));
    const mjs = this.modulePath(manifest.moduleSha256, 'mjs');
    const present = await stat(mjs).then(
      (s) => s.size === module.bytes.length,
      () => false,
    );
    if (!present) {
      await writeFileDurably(this.modulePath(manifest.moduleSha256, 'map'), [module.sourceMap]);
      await writeFileDurably(mjs, [module.bytes]);
    }
    await makeDirectory(join(this.dir, 'jobs', manifest.jobId));
    await fencedWrite(this.manifestPath(manifest.jobId), this.epoch, manifest);
  }

  /**
   * Claim a persisted job for this leader: its manifest is written again at this epoch, so from here on
   * the superseded leader can neither rewrite nor remove it (FencedError).
   */
  async claim(manifest: JobManifest): Promise<void> {
    const { epoch: _, ...record } = manifest as JobManifest & { epoch?: number };
    await fencedWrite(this.manifestPath(manifest.jobId), this.epoch, record);
  }

  /** A job ended: its history record goes in, its manifest goes (it is no longer to be taken over). */
  async ended(record: HistoryRecord): Promise<void> {
    await makeDirectory(join(this.dir, 'history'));
    await fencedWrite(join(this.dir, 'history', `${record.jobId}.json`), this.epoch, record);
    await fencedRemove(this.manifestPath(record.jobId), this.epoch);
  }

  /** The jobs to take over: every manifest on record. */
  async manifests(): Promise<JobManifest[]> {
    const ids = await readdir(join(this.dir, 'jobs')).catch(() => [] as string[]);
    const out: JobManifest[] = [];
    for (const id of ids.sort()) {
      const m = await readRecord<JobManifest>(this.manifestPath(id));
      if (m) out.push(m);
    }
    return out;
  }

  /** A persisted job module's bytes. */
  async module(sha256: string): Promise<{ sha256: string; bytes: Uint8Array; sourceMap: Uint8Array }> {
    const [bytes, sourceMap] = await Promise.all([
      readFile(this.modulePath(sha256, 'mjs')),
      readFile(this.modulePath(sha256, 'map')).catch(() => Buffer.alloc(0)),
    ]);
    return { sha256, bytes, sourceMap };
  }

  /** Ended jobs on record, oldest first, at most `limit` of the newest. */
  async history(limit: number): Promise<HistoryRecord[]> {
    const dir = join(this.dir, 'history');
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.json'));
    const records: HistoryRecord[] = [];
    for (const n of names) {
      const r = await readRecord<HistoryRecord>(join(dir, n)).catch(() => undefined);
      if (r) records.push(r);
    }
    return records.sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0)).slice(-limit);
  }
}
