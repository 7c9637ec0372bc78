/** How `clink run` and `submit` apply the lint's job checks: the warnings said, an error refused with the lint's message. */
import { refuseOnErrors, type Finding } from '../lint/index.js';

/** Say each warning on standard error; refuse on an error. */
export function gateJob(findings: readonly Finding[]): void {
  for (const f of findings) if (f.severity === 'warning') process.stderr.write(`warning: ${f.message}\n`);
  refuseOnErrors(findings);
}
