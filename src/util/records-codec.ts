/**
 * The msgpackr codec for records that travel or rest as values: records shared as msgpackr records,
 * Dates, Maps and the like kept. What collect() gathered is packed with it, both as the collect sink's
 * checkpointed state and in the frames that carry it back. msgpackr loads on first use, so a process
 * that never packs results does not pay for it at start-up.
 */
import { createRequire } from 'node:module';
import type * as Msgpackr from 'msgpackr';

let packr: Msgpackr.Packr | undefined;

export function recordsCodec(): Msgpackr.Packr {
  packr ??= new (createRequire(import.meta.url)('msgpackr') as typeof Msgpackr).Packr({
    useRecords: true,
    moreTypes: true,
  });
  return packr;
}
