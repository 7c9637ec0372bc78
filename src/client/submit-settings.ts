/**
 * How a submit's settings are read from text: the CLI's flags (`--checkpoint-interval-ms 500`) and the
 * HTTP submit's query parameters (`checkpoint_interval_ms=500`) go through the same parsers, so a value
 * one accepts the other accepts, and a malformed one is refused with the same words, naming the flag or
 * the parameter.
 */
import { InvalidArgumentError } from '../errors.js';
import { booleanText, bounds, keyValue, oneOf, wholeNumber, type ValueParser } from '../util/index.js';
import type { CheckpointSettings } from './index.js';

const text: ValueParser<string> = (v) => v;

export const GUARANTEES = ['at-most-once', 'at-least-once', 'exactly-once'] as const;
export type GuaranteeLevel = (typeof GUARANTEES)[number];

/** What a submit may say besides its module: every setting, by query parameter, with its CLI flag. */
export const SUBMIT_PARAMETERS = {
  parallelism: { flag: '--parallelism', parse: wholeNumber(1), doc: 'default parallelism of operators' },
  name: { flag: '--name', parse: text, doc: "the job's name [default: its defineJob name]" },
  guarantee: { flag: '--guarantee', parse: oneOf(GUARANTEES), doc: 'the delivery guarantee the job needs end to end' },
  autoscale: {
    flag: '--autoscale',
    parse: bounds,
    doc: 'let the autoscaler rescale the job within min..max (needs checkpoint_dir)',
  },
  checkpoint_dir: {
    flag: '--checkpoint-dir',
    parse: text,
    doc: 'take checkpoints into this directory (none without it)',
  },
  checkpoint_interval_ms: {
    flag: '--checkpoint-interval-ms',
    parse: wholeNumber(0),
    doc: 'how often to checkpoint (0: never on a timer)',
  },
  checkpoints_retained: { flag: '--checkpoints-retained', parse: wholeNumber(1), doc: 'completed checkpoints to keep' },
  state_backend: {
    flag: '--state-backend',
    parse: text,
    doc: 'where checkpoint state goes [default: the checkpoint dir]',
  },
  alignment: { flag: '--alignment', parse: oneOf(['aligned', 'unaligned'] as const), doc: 'barrier alignment' },
  max_restarts_from_checkpoint: {
    flag: '--max-restarts-from-checkpoint',
    parse: wholeNumber(-1),
    doc: 'restarts from the last checkpoint (-1: automatic, 10)',
  },
  max_region_retries: {
    flag: '--max-region-retries',
    parse: wholeNumber(-1),
    doc: "retries of a failed subtask's region without checkpoints (-1: the coordinator's default)",
  },
  restore_from_dir: {
    flag: '--restore-from-dir',
    parse: text,
    doc: 'restore from a checkpoint or savepoint directory',
  },
  restore_from_checkpoint_id: {
    flag: '--restore-from-checkpoint-id',
    parse: wholeNumber(0),
    doc: 'the checkpoint to restore (0: the newest completed)',
  },
  allow_non_restored_state: {
    flag: '--allow-non-restored-state',
    parse: booleanText,
    doc: 'restore even though the checkpoint holds state for operators the job no longer has',
  },
  allow_duplicates_on_fallback: {
    flag: '--allow-duplicates-on-fallback',
    parse: booleanText,
    doc: 'fall back past a damaged newest checkpoint even where transactional sinks write again what they committed (at-least-once)',
  },
  param: { flag: '--param', parse: keyValue, doc: 'a job parameter key=value (repeatable)' },
} as const;

export interface SubmitSettings {
  parallelism?: number;
  name?: string;
  guarantee?: GuaranteeLevel;
  autoscale?: { min: number; max: number };
  params: Record<string, string>;
  checkpoint: Partial<CheckpointSettings>;
}

/**
 * A submit's settings from query parameters. An unset one keeps its default; an unknown or malformed one
 * throws an InvalidArgumentError naming the parameter, never defaulted silently.
 */
export function submitSettingsFromQuery(
  query: Readonly<Record<string, string | string[] | undefined>>,
): SubmitSettings {
  const known = SUBMIT_PARAMETERS as Record<string, { parse: ValueParser<unknown> }>;
  const values: Record<string, unknown> = {};
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(query)) {
    if (raw === undefined) continue;
    const def = known[name];
    if (!def)
      throw new InvalidArgumentError(
        `unknown query parameter '${name}'; a submit takes ${Object.keys(SUBMIT_PARAMETERS).join(', ')}`,
      );
    const all = Array.isArray(raw) ? raw : [raw];
    if (name !== 'param' && all.length > 1)
      throw new InvalidArgumentError(`query parameter ${name} is given ${all.length} times; give it once`);
    for (const v of all) {
      let parsed: unknown;
      try {
        parsed = def.parse(v);
      } catch (err) {
        throw new InvalidArgumentError(`query parameter ${name}: ${(err as Error).message}`);
      }
      if (name === 'param') {
        const [k, value] = parsed as [string, string];
        params[k] = value;
      } else values[name] = parsed;
    }
  }
  const checkpoint: Partial<CheckpointSettings> = {};
  const set = <K extends keyof CheckpointSettings>(key: K, from: string): void => {
    if (values[from] !== undefined) checkpoint[key] = values[from] as CheckpointSettings[K];
  };
  set('checkpointDir', 'checkpoint_dir');
  set('intervalMs', 'checkpoint_interval_ms');
  set('checkpointsRetained', 'checkpoints_retained');
  set('stateBackendUri', 'state_backend');
  set('alignment', 'alignment');
  set('maxRestartsOnWorkerLoss', 'max_restarts_from_checkpoint');
  set('maxRestarts', 'max_region_retries');
  set('restoreFromDir', 'restore_from_dir');
  set('restoreFromCheckpointId', 'restore_from_checkpoint_id');
  set('allowNonRestoredState', 'allow_non_restored_state');
  set('allowDuplicatesOnFallback', 'allow_duplicates_on_fallback');
  return {
    params,
    checkpoint,
    ...(values.parallelism !== undefined ? { parallelism: values.parallelism as number } : {}),
    ...(values.name !== undefined ? { name: values.name as string } : {}),
    ...(values.guarantee !== undefined ? { guarantee: values.guarantee as GuaranteeLevel } : {}),
    ...(values.autoscale !== undefined ? { autoscale: values.autoscale as { min: number; max: number } } : {}),
  };
}
