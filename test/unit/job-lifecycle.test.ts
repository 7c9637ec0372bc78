import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  IllegalTransitionError,
  isTerminal,
  JOB_TRANSITIONS,
  transition,
  type JobStateName,
} from '../../src/coordinator/index.js';

const STATES = Object.keys(JOB_TRANSITIONS) as JobStateName[];
const LEGAL = new Set([
  'DEPLOYING>RUNNING',
  'DEPLOYING>RESTARTING',
  'DEPLOYING>FINISHED',
  'DEPLOYING>FAILED',
  'DEPLOYING>CANCELED',
  'RUNNING>RESTARTING',
  'RUNNING>RESCALING',
  'RUNNING>FINISHED',
  'RUNNING>FAILED',
  'RUNNING>CANCELED',
  'RESTARTING>DEPLOYING',
  'RESTARTING>FAILED',
  'RESTARTING>CANCELED',
  'RESCALING>DEPLOYING',
  'RESCALING>FAILED',
  'RESCALING>CANCELED',
]);

test('every legal job state transition is allowed and every other one throws, naming the job and what is legal', () => {
  assert.deepEqual(STATES, ['DEPLOYING', 'RUNNING', 'RESTARTING', 'RESCALING', 'FINISHED', 'FAILED', 'CANCELED']);
  for (const from of STATES) {
    for (const to of STATES) {
      if (LEGAL.has(`${from}>${to}`)) assert.equal(transition(from, to, 'job x'), to);
      else
        assert.throws(
          () => transition(from, to, 'job x'),
          (e: unknown) =>
            e instanceof IllegalTransitionError &&
            e.message.startsWith(`illegal job state transition ${from} -> ${to} (job x)`),
        );
    }
  }
  assert.throws(
    () => transition('RESTARTING', 'RUNNING', 'job 7'),
    /^IllegalTransitionError: illegal job state transition RESTARTING -> RUNNING \(job 7\); legal from RESTARTING: DEPLOYING, FAILED, CANCELED$/,
  );
  assert.throws(() => transition('FINISHED', 'RUNNING', 'job 7'), /legal from FINISHED: none \(terminal\)$/);
});

test('the ended states are terminal and only they are', () => {
  assert.deepEqual(STATES.filter(isTerminal), ['FINISHED', 'FAILED', 'CANCELED']);
});
