/**
 * The SDK gate: a job module records, in its first line, the fingerprint of the SDK surface it was
 * built against and the SDK version. A process loads it only when the fingerprint equals its own (or,
 * with CLINK_STRICT_PLUGIN_ABI=1, when the versions are equal). A refusal names what differs.
 */
import { readFileSync } from 'node:fs';
import { ClinkError } from '../errors.js';
import { SDK_MANIFEST } from './sdk-manifest.js';

export interface SdkIdentity {
  fingerprint: string;
  version: string;
}

export class SdkMismatchError extends ClinkError {
  constructor(message: string) {
    super('CLINK_ERR_SDK_MISMATCH', message);
  }
}

let version: string | undefined;
/** This engine's SDK version (its package version). */
export function sdkVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
    .version;
  return version;
}

export function localSdk(): SdkIdentity {
  return { fingerprint: SDK_MANIFEST.fingerprint, version: sdkVersion() };
}

export function localSdkManifest(): Record<string, string> {
  return { ...SDK_MANIFEST.files };
}

const BANNER = /^\/\/ clink-sdk fingerprint=([0-9a-f]{64}) version=(\S+)\n/;

export function banner(id: SdkIdentity): string {
  return `// clink-sdk fingerprint=${id.fingerprint} version=${id.version}`;
}

/** The SDK a bundle was built against, from its first line; undefined when it has no banner. */
export function bundleSdk(code: Uint8Array | string): SdkIdentity | undefined {
  const head = typeof code === 'string' ? code.slice(0, 200) : Buffer.from(code.subarray(0, 200)).toString('utf8');
  const m = BANNER.exec(head);
  return m ? { fingerprint: m[1]!, version: m[2]! } : undefined;
}

/** The files whose declarations differ between two manifests. */
export function differingFiles(theirs: Record<string, string>, ours: Record<string, string>): string[] {
  return [...new Set([...Object.keys(theirs), ...Object.keys(ours)])].filter((f) => theirs[f] !== ours[f]).sort();
}

/**
 * Whether a module built against `module` may load here. `theirManifest`, when known, lets the refusal
 * name the declaration files that differ.
 */
export function checkSdkCompatibility(
  module: SdkIdentity | undefined,
  where: string,
  theirManifest?: Record<string, string>,
): void {
  const local = localSdk();
  if (!module)
    throw new SdkMismatchError(
      `${where}: the job module records no SDK fingerprint; rebuild it with this clink (${local.version})`,
    );
  if (process.env.CLINK_STRICT_PLUGIN_ABI === '1') {
    if (module.version !== local.version) {
      throw new SdkMismatchError(
        `${where}: the job module was built with clink ${module.version}, this cluster runs ${local.version} (CLINK_STRICT_PLUGIN_ABI=1 requires the same version)`,
      );
    }
    return;
  }
  if (module.fingerprint === local.fingerprint) return;
  const files = theirManifest ? differingFiles(theirManifest, localSdkManifest()) : [];
  const which = files.length > 0 ? `; the SDK declarations differ in ${files.join(', ')}` : '';
  throw new SdkMismatchError(
    `${where}: the job module was built against an incompatible SDK (fingerprint ${module.fingerprint.slice(0, 12)}, clink ${module.version}; here ${local.fingerprint.slice(0, 12)}, clink ${local.version})${which}; rebuild the module with this cluster's clink`,
  );
}
