/**
 * Before a job deploys, each built-in connector it names checks its external system (the factories'
 * `check`), all at once and each within `timeoutMs`: an address that does not answer, a topic, table or
 * stream that is not there, or credentials refused are one line at submit instead of restarts after it.
 * An option that names a secret this process cannot read (`env://VAR` set only on the workers) leaves
 * that connector unchecked here; it is read where the job runs.
 */
import { connectorOptions, namedConnector } from '../sdk/index.js';
import { resolveSecrets } from './secrets.js';

export interface CheckedOperator {
  name: string;
  type: string;
  options: Record<string, unknown>;
}

/** One line per operator whose external system failed its check (none: every check passed or was skipped). */
export async function checkConnectors(
  operators: readonly CheckedOperator[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  if (timeoutMs <= 0) return [];
  const checks = operators.map(async (op): Promise<string | undefined> => {
    const name = op.options.connector;
    if ((op.type !== 'source' && op.type !== 'sink') || typeof name !== 'string' || op.options.connectorInJob === true)
      return undefined;
    const factory = namedConnector(name)?.[op.type];
    if (!factory?.check) return undefined;
    let options: unknown;
    try {
      options = resolveSecrets(connectorOptions(op.options), op.name, env);
    } catch {
      return undefined;
    }
    const signal = AbortSignal.timeout(timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    // A check that does not settle by its deadline counts as an address that does not answer.
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs} ms (--connector-check-timeout-ms)`)),
        timeoutMs + 1_000,
      );
    });
    try {
      await Promise.race([
        factory.check(factory.validate ? factory.validate(options) : options, {
          operatorName: op.name,
          signal,
          timeoutMs,
        }),
        late,
      ]);
      return undefined;
    } catch (err) {
      return `${op.type} '${op.name}': ${(err as Error).message}`;
    } finally {
      clearTimeout(timer);
    }
  });
  return (await Promise.all(checks)).filter((m): m is string => m !== undefined);
}
