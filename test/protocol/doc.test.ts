import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { renderProtocolDoc } from '../../scripts/protocol-doc.js';

test('docs/protocol.md is the schema’s current layout (regenerate with scripts/protocol-doc.ts)', async () => {
  const doc = await readFile(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
  assert.equal(doc, renderProtocolDoc());
});
