/**
 * How a submit's settings are read from text: the CLI's flags (`--checkpoint-interval-ms 500`) and the
 * HTTP submit's query parameters (`checkpoint_interval_ms=500`) go through the same parsers, so a value
 * one accepts the other accepts, and a malformed one is refused with the same words, naming the flag or
 * the parameter.
 */
import { InvalidArgumentError } from '../errors.js';
import { ALIGNMENT_MODES, STATE_BACKEND_TYPES, type StateBackendType } from '../protocol/index.js';
import { booleanText, bounds, flinkDuration, keyValue, oneOf, wholeNumber, type ValueParser } from '../util/index.js';
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
  state_backend_type: {
    flag: '--state-backend-type',
    parse: oneOf(STATE_BACKEND_TYPES),
    doc: "where keyed state lives: heap, or disk (LMDB, beyond memory) [default: the cluster's]",
  },
  alignment: {
    flag: '--alignment',
    parse: oneOf(ALIGNMENT_MODES),
    doc: 'barrier alignment',
  },
  aligned_checkpoint_timeout_ms: {
    flag: '--aligned-checkpoint-timeout-ms',
    parse: wholeNumber(0),
    doc: 'with alignment adaptive: a periodic checkpoint not complete within this becomes unaligned (0: unaligned from the start)',
  },
  checkpoint_timeout_ms: {
    flag: '--checkpoint-timeout-ms',
    parse: wholeNumber(0),
    doc: 'abort a checkpoint not complete within this (0: max(10 s, 10 intervals))',
  },
  checkpoint_min_pause_ms: {
    flag: '--checkpoint-min-pause-ms',
    parse: wholeNumber(0),
    doc: 'the least time from the end of a checkpoint to the start of the next',
  },
  tolerable_failed_checkpoints: {
    flag: '--tolerable-failed-checkpoints',
    parse: wholeNumber(-1),
    doc: 'consecutive failed checkpoints tolerated before the job restarts from its last (-1: any number)',
  },
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

export type SubmitParameter = keyof typeof SUBMIT_PARAMETERS;

/** Flink's state.backend.type: its hashmap is the heap backend; rocksdb (and forst) the disk one. */
function flinkStateBackendType(v: string): StateBackendType {
  const t = v.trim().toLowerCase();
  if (t === 'hashmap' || t === 'heap') return 'heap';
  if (t === 'rocksdb' || t === 'forst' || t === 'disk') return 'disk';
  throw new InvalidArgumentError(`'${v}' is not a state backend type; give heap (Flink's hashmap) or disk (rocksdb)`);
}

/**
 * Flink's configuration keys for the same settings, accepted wherever a setting is named by key (a
 * submit's query, SQL's SET): each names its parameter and parses Flink's way of writing the value.
 */
export const FLINK_SETTING_KEYS: Readonly<Record<string, { parameter: SubmitParameter; parse: ValueParser<unknown> }>> =
  {
    'execution.checkpointing.interval': { parameter: 'checkpoint_interval_ms', parse: flinkDuration },
    'execution.checkpointing.timeout': { parameter: 'checkpoint_timeout_ms', parse: flinkDuration },
    'execution.checkpointing.min-pause': { parameter: 'checkpoint_min_pause_ms', parse: flinkDuration },
    'execution.checkpointing.aligned-checkpoint-timeout': {
      parameter: 'aligned_checkpoint_timeout_ms',
      parse: flinkDuration,
    },
    'execution.checkpointing.tolerable-failed-checkpoints': {
      parameter: 'tolerable_failed_checkpoints',
      parse: wholeNumber(0),
    },
    'execution.checkpointing.num-retained': { parameter: 'checkpoints_retained', parse: wholeNumber(1) },
    'state.checkpoints.num-retained': { parameter: 'checkpoints_retained', parse: wholeNumber(1) },
    'execution.checkpointing.dir': { parameter: 'checkpoint_dir', parse: text },
    'execution.checkpointing.unaligned.enabled': {
      parameter: 'alignment',
      parse: (v) => (booleanText(v) ? 'unaligned' : 'aligned'),
    },
    'execution.checkpointing.unaligned': {
      parameter: 'alignment',
      parse: (v) => (booleanText(v) ? 'unaligned' : 'aligned'),
    },
    'state.checkpoints.dir': { parameter: 'checkpoint_dir', parse: text },
    'state.backend.type': { parameter: 'state_backend_type', parse: flinkStateBackendType },
  };

/**
 * One setting named by its parameter (`checkpoint_timeout_ms`) or Flink's key
 * (`execution.checkpointing.timeout`): which parameter it is and its value. Throws an
 * InvalidArgumentError naming `what` (the query parameter, the SET key) when unknown or malformed.
 */
export function parseSetting(name: string, raw: string, what: string): { parameter: SubmitParameter; value: unknown } {
  const flink = FLINK_SETTING_KEYS[name];
  const own = (SUBMIT_PARAMETERS as Record<string, { parse: ValueParser<unknown> }>)[name];
  const parameter = flink?.parameter ?? (own ? (name as SubmitParameter) : undefined);
  if (!parameter)
    throw new InvalidArgumentError(
      `unknown ${what} '${name}'; a submit takes ${Object.keys(SUBMIT_PARAMETERS).join(', ')}, or Flink's ${Object.keys(FLINK_SETTING_KEYS).join(', ')}`,
    );
  try {
    return { parameter, value: (flink ?? own)!.parse(raw) };
  } catch (err) {
    throw new InvalidArgumentError(`${what} ${name}: ${(err as Error).message}`);
  }
}

/**
 * The checkpoint settings a SQL session's SETs make (`SET 'execution.checkpointing.timeout' = '30 s'`),
 * by Flink's key or the query parameter's name. A key that is no checkpoint setting is refused: the
 * rest of a submit (parallelism, name, parameters) is given where the job is submitted.
 */
export function checkpointSettingsOfSets(sets: Readonly<Record<string, string>>): Partial<CheckpointSettings> {
  const values: Partial<Record<SubmitParameter, unknown>> = {};
  for (const [key, raw] of Object.entries(sets)) {
    const { parameter, value } = parseSetting(key, raw, 'setting');
    values[parameter] = value;
    if (Object.keys(settingsOf({ [parameter]: value }).checkpoint).length === 0)
      throw new InvalidArgumentError(
        `setting '${key}' is not a checkpoint setting; SET takes execution.checkpointing.* keys (or their query parameter names), and the job's other settings are given where it is submitted`,
      );
  }
  return settingsOf(values).checkpoint;
}

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
  const values: Partial<Record<SubmitParameter, unknown>> = {};
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(query)) {
    if (raw === undefined) continue;
    const all = Array.isArray(raw) ? raw : [raw];
    if (name !== 'param' && all.length > 1)
      throw new InvalidArgumentError(`query parameter ${name} is given ${all.length} times; give it once`);
    for (const v of all) {
      const { parameter, value } = parseSetting(name, v, 'query parameter');
      if (parameter === 'param') {
        const [k, pv] = value as [string, string];
        params[k] = pv;
      } else values[parameter] = value;
    }
  }
  return settingsOf(values, params);
}

/** Submit settings from parsed parameter values (a query's, a SQL session's SETs). */
export function settingsOf(
  values: Readonly<Partial<Record<SubmitParameter, unknown>>>,
  params: Record<string, string> = {},
): SubmitSettings {
  const checkpoint: Partial<CheckpointSettings> = {};
  const set = <K extends keyof CheckpointSettings>(key: K, from: SubmitParameter): void => {
    if (values[from] !== undefined) checkpoint[key] = values[from] as CheckpointSettings[K];
  };
  set('checkpointDir', 'checkpoint_dir');
  set('intervalMs', 'checkpoint_interval_ms');
  set('checkpointsRetained', 'checkpoints_retained');
  set('stateBackendUri', 'state_backend');
  set('stateBackendType', 'state_backend_type');
  set('alignment', 'alignment');
  set('timeoutMs', 'checkpoint_timeout_ms');
  set('minPauseMs', 'checkpoint_min_pause_ms');
  set('alignedTimeoutMs', 'aligned_checkpoint_timeout_ms');
  set('tolerableFailures', 'tolerable_failed_checkpoints');
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
