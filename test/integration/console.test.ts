// The console's serving rules through inject(): the built console at /, deep links to index.html, real
// 404s for missing assets, nothing outside the root (.. or a symbolic link), never a shadowed API route;
// --http-static-dir mounts another build; with the token, the console loads and its API calls need it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Coordinator } from '../../src/coordinator/index.js';
import { buildHttpApp } from '../../src/http/index.js';
import { memoryLogger } from '../../src/log/index.js';
import { ClinkMetrics } from '../../src/metrics/index.js';

async function node(o: { staticDir?: string; authToken?: string } = {}) {
  const { log } = memoryLogger();
  const metrics = new ClinkMetrics();
  const coordinator = await Coordinator.start(
    { port: 0 },
    { log, metrics, ...(o.authToken ? { authToken: o.authToken } : {}) },
  );
  const app = buildHttpApp({ role: 'coordinator', metrics, config: {}, coordinator, ...o });
  return { app, close: async () => (await app.close(), await coordinator.stop()) };
}

describe('the console', () => {
  test('the built console at /; deep links get its page; missing assets, paths outside it and API paths do not', async () => {
    const { app, close } = await node();
    try {
      const get = (url: string) => app.inject({ method: 'GET', url });
      const index = await get('/');
      assert.equal(index.statusCode, 200);
      assert.match(index.headers['content-type'] as string, /^text\/html/);
      assert.match(index.body, /<script type="module" src="\/console.js">/);
      const deep = await get('/jobs/abc123');
      assert.equal(deep.statusCode, 200);
      assert.equal(deep.body, index.body);
      const js = await get('/console.js');
      assert.equal(js.statusCode, 200);
      assert.match(js.headers['content-type'] as string, /javascript/);
      assert.equal((await get('/console.css')).statusCode, 200);
      const missing = await get('/missing.js');
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().code, 'CLINK_ERR_NOT_FOUND');
      for (const escape of [
        '/../package.json',
        '/%2e%2e/package.json',
        '/..%2fpackage.json',
        '/%2e%2e%2f%2e%2e%2fetc/passwd',
      ]) {
        const r = await get(escape);
        assert.notEqual(r.statusCode, 200, escape);
        assert.doesNotMatch(r.body, /"name": "clink"|root:/, escape);
      }
      const api = await get('/api/v1/no-such-route');
      assert.equal(api.statusCode, 404);
      assert.equal(api.json().code, 'CLINK_ERR_NOT_FOUND');
      assert.equal((await get('/api/v1/jobs')).json().jobs.length, 0);
      assert.match((await get('/metrics')).body, /clink_/);
    } finally {
      await close();
    }
  });

  test('--http-static-dir serves another build and refuses a link out of it; a directory without index.html is refused at start', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clink-console-'));
    const outside = await mkdtemp(join(tmpdir(), 'clink-outside-'));
    try {
      await writeFile(join(dir, 'index.html'), '<!doctype html><title>mine</title>');
      await writeFile(join(dir, 'app.js'), 'export {};');
      await writeFile(join(outside, 'secret.txt'), 'not for the web');
      await symlink(join(outside, 'secret.txt'), join(dir, 'leak.txt'));
      const { app, close } = await node({ staticDir: dir });
      try {
        assert.match((await app.inject({ method: 'GET', url: '/' })).body, /<title>mine<\/title>/);
        assert.equal((await app.inject({ method: 'GET', url: '/app.js' })).statusCode, 200);
        const leak = await app.inject({ method: 'GET', url: '/leak.txt' });
        assert.equal(leak.statusCode, 404);
        assert.match(leak.json().message, /outside the console/);
      } finally {
        await close();
      }
      const bad = await node({ staticDir: outside });
      await assert.rejects(
        async () => bad.app.ready(),
        /--http-static-dir .*: it has no index\.html; point it at a built console/,
      );
      await bad.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });

  test('with the cluster token the console loads without it (to ask for it); every API route still needs it', async () => {
    const { app, close } = await node({ authToken: 'sesame' });
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/jobs/x' })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/jobs' })).statusCode, 401);
      assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
      assert.equal((await app.inject({ method: 'POST', url: '/anything' })).statusCode, 401);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/api/v1/jobs', headers: { authorization: 'Bearer sesame' } }))
          .statusCode,
        200,
      );
    } finally {
      await close();
    }
  });
});
