/**
 * What `collect()` sinks gathered, as SubtaskFinished and JobCompleted carry it: a msgpack map of
 * collect name -> values (records shared as msgpackr records; Dates, Maps and the like kept). One codec
 * for the worker that packs, the coordinator that merges and the client that reads. msgpackr loads on
 * first use, so a client that never receives results does not pay for it at start-up.
 */
import { createRequire } from 'node:module';
import type * as Msgpackr from 'msgpackr';

let packr: Msgpackr.Packr | undefined;

function codec(): Msgpackr.Packr {
  packr ??= new (createRequire(import.meta.url)('msgpackr') as typeof Msgpackr).Packr({ useRecords: true, moreTypes: true });
  return packr;
}

export function encodeCollected(collected: Record<string, unknown[]>): Uint8Array {
  return codec().pack(collected);
}

export function decodeCollected(bytes: Uint8Array): Record<string, unknown[]> {
  return codec().unpack(bytes) as Record<string, unknown[]>;
}
