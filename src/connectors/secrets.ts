/**
 * Connector options may name a secret instead of holding it: `env://VAR` is read from the environment of
 * the process that runs the connector (the worker), when its job is deployed. The spec, the persisted
 * job and the API carry only the reference. A variable that is not set fails the deploy, naming it:
 * never an empty password, silently.
 */
import { ConnectorError } from '../errors.js';

const REFERENCE = /^env:\/\/(.*)$/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A copy of `options` with every `env://VAR` string replaced by the variable's value. */
export function resolveSecrets(
  options: Record<string, unknown>,
  operator: string,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, unknown> {
  const walk = (v: unknown, path: string): unknown => {
    if (typeof v === 'string') {
      const m = REFERENCE.exec(v);
      if (!m) return v;
      const name = m[1]!;
      if (!NAME.test(name))
        throw new ConnectorError(
          `operator '${operator}': option ${path} is '${v}', which names no environment variable (env://NAME, NAME letters, digits and _)`,
        );
      const value = env[name];
      if (value === undefined)
        throw new ConnectorError(
          `operator '${operator}': option ${path} is env://${name}, and ${name} is not set where the job runs: set it in the environment of every worker (and of clink run)`,
        );
      return value;
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`));
    if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, path ? `${path}.${k}` : k)]));
    }
    return v;
  };
  return walk(options, '') as Record<string, unknown>;
}
