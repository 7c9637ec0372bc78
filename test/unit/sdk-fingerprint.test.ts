import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeSdkManifest } from '../../scripts/sdk-fingerprint.js';
import { localSdk, localSdkManifest } from '../../src/loader/index.js';

test('the SDK fingerprint manifest matches the SDK’s declarations (regenerate with scripts/sdk-fingerprint.ts)', () => {
  const current = computeSdkManifest();
  assert.deepEqual(
    localSdkManifest(),
    current.files,
    'the public type surface changed: run node --import tsx scripts/sdk-fingerprint.ts',
  );
  assert.equal(localSdk().fingerprint, current.fingerprint);
});
