/**
 * What `collect()` sinks gathered, as SubtaskFinished and JobCompleted carry it: a msgpack map of
 * collect name -> values, in the records codec (util/records-codec.ts) that the collect sink's state uses
 * too. One codec for the worker that packs, the coordinator that merges and the client that reads.
 */
import { recordsCodec } from '../util/index.js';

export function encodeCollected(collected: Record<string, unknown[]>): Uint8Array {
  return recordsCodec().pack(collected);
}

export function decodeCollected(bytes: Uint8Array): Record<string, unknown[]> {
  return recordsCodec().unpack(bytes) as Record<string, unknown[]>;
}
