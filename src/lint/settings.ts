/**
 * The checks on a job's checkpoint and restore settings (`clink run`/`submit` flags, the HTTP submit's
 * query, the SubmitJob frame). The coordinator refuses a submit with any error here (coordinator/checkpoint-storage.ts),
 * so a clean lint means these settings will be accepted.
 */
import type { MessageOf } from '../protocol/index.js';
import { stateBackendDir } from '../state/index.js';
import { MAX_TIMER_DELAY_MS } from '../util/index.js';
import { lintError, lintWarning, type Finding } from './finding.js';

export type CheckpointSettings = MessageOf<'SubmitJob'>['checkpoint'];

/** A delay above what a timer can wait means never: said of the flag that set it. */
export function timerFinding(flag: string, ms: number): Finding[] {
  if (ms <= MAX_TIMER_DELAY_MS) return [];
  return [
    lintWarning(
      'timer-too-long',
      `${flag} ${ms} is longer than a timer can wait (${MAX_TIMER_DELAY_MS} ms, about 24.8 days), so it means never; give a smaller value`,
    ),
  ];
}

export function checkpointSettingsFindings(c: CheckpointSettings): Finding[] {
  const out: Finding[] = [];
  const checkpointing = c.checkpointDir !== '';
  if (c.alignment === 'aligned' && c.alignedTimeoutMs > 0)
    out.push(
      lintWarning(
        'aligned-timeout-without-unaligned',
        `--aligned-checkpoint-timeout-ms ${c.alignedTimeoutMs} is ignored with --alignment aligned: give --alignment adaptive to make a checkpoint unaligned past it`,
      ),
    );
  if (c.alignment === 'adaptive' && c.alignedTimeoutMs === 0)
    out.push(
      lintWarning(
        'adaptive-without-timeout',
        '--alignment adaptive without --aligned-checkpoint-timeout-ms takes every periodic checkpoint unaligned (as Flink does with a timeout of 0); give a timeout to start them aligned',
      ),
    );
  if (c.checkpointsRetained < 1)
    out.push(
      lintError('checkpoints-retained', `--checkpoints-retained ${c.checkpointsRetained}: keep at least 1 checkpoint`),
    );
  if (c.stateBackendUri) {
    if (!checkpointing)
      out.push(
        lintError(
          'state-backend-without-dir',
          `--state-backend ${c.stateBackendUri} needs --checkpoint-dir too (the COMPLETED markers go there)`,
        ),
      );
    else {
      try {
        stateBackendDir(c.stateBackendUri);
      } catch (err) {
        out.push(lintError('state-backend-invalid', (err as Error).message));
      }
    }
  }
  if (c.intervalMs > 0 && !checkpointing)
    out.push(
      lintError(
        'interval-without-dir',
        `--checkpoint-interval-ms ${c.intervalMs} needs --checkpoint-dir (where checkpoints go)`,
      ),
    );
  // Half a restore pair: without the directory the id names nothing, and the job would start empty.
  if (c.restoreFromCheckpointId > 0 && !c.restoreFromDir) {
    out.push(
      lintError(
        'restore-id-without-dir',
        `--restore-from-checkpoint-id ${c.restoreFromCheckpointId} needs --restore-from-dir (the checkpoint directory or savepoint it is in); without it the job would start with no state`,
      ),
    );
  }
  if (c.allowDuplicatesOnFallback && !checkpointing && !c.restoreFromDir) {
    out.push(
      lintWarning(
        'duplicates-on-fallback-without-restore',
        '--allow-duplicates-on-fallback is ignored without --checkpoint-dir or --restore-from-dir: nothing is restored',
      ),
    );
  }
  if (c.allowNonRestoredState && !c.restoreFromDir) {
    out.push(
      lintWarning(
        'non-restored-without-restore',
        '--allow-non-restored-state is ignored without --restore-from-dir: nothing is restored',
      ),
    );
  }
  if (!checkpointing) {
    if (c.checkpointsRetained > 1)
      out.push(
        lintWarning(
          'retained-without-dir',
          `--checkpoints-retained ${c.checkpointsRetained} is ignored without --checkpoint-dir: no checkpoint is taken`,
        ),
      );
    if (c.maxRestartsOnWorkerLoss >= 0) {
      out.push(
        lintWarning(
          'restarts-without-dir',
          `--max-restarts-from-checkpoint ${c.maxRestartsOnWorkerLoss} is ignored without --checkpoint-dir: there is no checkpoint to restart from (--max-region-retries sets retries without one)`,
        ),
      );
    }
  } else {
    if (c.maxRestarts >= 0) {
      out.push(
        lintWarning(
          'region-retries-with-dir',
          `--max-region-retries ${c.maxRestarts} is ignored with --checkpoint-dir: a failure restarts the job from its last checkpoint (--max-restarts-from-checkpoint sets how often)`,
        ),
      );
    }
    if (c.intervalMs === 0) {
      out.push(
        lintWarning(
          'dir-without-interval',
          '--checkpoint-dir without --checkpoint-interval-ms: checkpoints are taken only for savepoints and at the end of input, so exactly-once sinks commit nothing before then and a restart replays from the start; set --checkpoint-interval-ms',
        ),
      );
    }
  }
  out.push(...periodicOnlyFindings(c));
  out.push(...timerFinding('--checkpoint-interval-ms', c.intervalMs));
  out.push(...timerFinding('--checkpoint-timeout-ms', c.timeoutMs));
  out.push(...timerFinding('--checkpoint-min-pause-ms', c.minPauseMs));
  out.push(...timerFinding('--aligned-checkpoint-timeout-ms', c.alignedTimeoutMs));
  return out;
}

/** Settings that shape periodic checkpoints only: said to be ignored in a job that takes none. */
function periodicOnlyFindings(c: CheckpointSettings): Finding[] {
  if (c.checkpointDir !== '' && c.intervalMs > 0) return [];
  const set = [
    c.minPauseMs > 0 ? `--checkpoint-min-pause-ms ${c.minPauseMs}` : '',
    c.tolerableFailures >= 0 ? `--tolerable-failed-checkpoints ${c.tolerableFailures}` : '',
    c.alignedTimeoutMs > 0 ? `--aligned-checkpoint-timeout-ms ${c.alignedTimeoutMs}` : '',
  ].filter((s) => s !== '');
  return set.map((flag) =>
    lintWarning(
      'periodic-setting-without-interval',
      `${flag} is ignored without --checkpoint-dir and --checkpoint-interval-ms: the job takes no periodic checkpoints`,
    ),
  );
}
