/**
 * What a subtask is doing, reported as it changes (per batch, never per record), so a watchdog that
 * finds the thread stuck can say where: the code running is the user's inside that phase.
 */
export const SubtaskPhase = {
  STARTING: 1,
  READING: 2,
  PROCESSING: 3,
  SNAPSHOTTING: 4,
  COMMITTING: 5,
  FINISHING: 6,
  IDLE: 7,
} as const;
export type SubtaskPhaseCode = (typeof SubtaskPhase)[keyof typeof SubtaskPhase];
export const PHASE_DESCRIPTIONS: Readonly<Record<number, string>> = {
  [SubtaskPhase.STARTING]: 'opening its operators',
  [SubtaskPhase.READING]: 'reading its source and processing what it read',
  [SubtaskPhase.PROCESSING]: 'processing a batch of records',
  [SubtaskPhase.SNAPSHOTTING]: 'taking a checkpoint snapshot',
  [SubtaskPhase.COMMITTING]: 'committing a checkpoint',
  [SubtaskPhase.FINISHING]: 'finishing (end of input)',
  [SubtaskPhase.IDLE]: 'waiting for input',
};
