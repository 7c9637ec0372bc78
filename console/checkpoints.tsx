/**
 * A job's checkpoints: the newest twenty, and for the one picked, each subtask's part (slowest ack
 * first), so a user sees which subtask held a checkpoint back and why: a late barrier (start delay), a
 * long alignment, or a large snapshot or in-flight capture.
 */
import { useState } from 'preact/hooks';
import type { Checkpoint } from './api.js';
import { fmt, Table, when } from './views.js';

const SHOWN = 20;

export function Checkpoints({ checkpoints }: { checkpoints: Checkpoint[] }) {
  const [picked, setPicked] = useState<number | undefined>(undefined);
  const newest = [...checkpoints].reverse().slice(0, SHOWN);
  const detail = checkpoints.find((c) => c.checkpointId === picked);
  return (
    <>
      <Table
        testId="checkpoints"
        head={['id', 'kind', 'barriers', 'duration', 'start delay', 'alignment', 'size', 'in flight', 'completed']}
        rows={newest.map((c) => [
          <button
            class="link"
            data-testid={`checkpoint-${c.checkpointId}`}
            title="each subtask's part"
            onClick={() => setPicked(c.checkpointId === picked ? undefined : c.checkpointId)}
          >
            {c.checkpointId}
          </button>,
          c.kind,
          c.alignment,
          `${c.durationMs} ms`,
          `${c.startDelayMs} ms`,
          `${c.alignmentMs} ms`,
          `${fmt(c.stateBytes)} B`,
          `${fmt(c.inflightBytes)} B`,
          when(c.completedAtMs),
        ])}
      />
      {detail ? <SubtaskParts checkpoint={detail} /> : null}
    </>
  );
}

function SubtaskParts({ checkpoint }: { checkpoint: Checkpoint }) {
  const parts = Object.entries(checkpoint.subtasks).sort(([, a], [, b]) => b.ackMs - a.ackMs);
  return (
    <>
      <h4>Checkpoint {checkpoint.checkpointId} by subtask, slowest first</h4>
      <Table
        testId="checkpoint-subtasks"
        head={['subtask', 'acked after', 'start delay', 'alignment', 'barriers', 'size', 'in flight']}
        rows={parts.map(([subtask, p]) => [
          subtask,
          `${p.ackMs} ms`,
          `${p.startDelayMs} ms`,
          `${p.alignmentMs} ms`,
          p.unaligned ? 'unaligned' : 'aligned',
          `${fmt(p.stateBytes)} B`,
          `${fmt(p.inflightBytes)} B`,
        ])}
      />
    </>
  );
}
