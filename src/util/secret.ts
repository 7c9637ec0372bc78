/**
 * The cluster's shared secret (`CLINK_AUTH_TOKEN`: an environment variable, never a flag, so it stays
 * out of `ps` and shell history) and its comparison, which takes the same time whatever the guess.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export const AUTH_TOKEN_ENV = 'CLINK_AUTH_TOKEN';

/** The token from the environment, or undefined when unset or empty. */
export function authTokenFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const t = env[AUTH_TOKEN_ENV];
  return t ? t : undefined;
}

/** Whether `given` is `expected`, in constant time (both are hashed first, so their lengths leak nothing). */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}
