/**
 * The SQL session's thread (sql-thread.ts): it owns the session and its catalog, and answers each
 * request in order with plain data.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ClinkError } from '../errors.js';
import { SqlCatalog, SqlError, SqlSession } from '../sql/index.js';
import { checkpointSettingsOfSets } from '../client/index.js';
import type { SqlThreadReply, SqlThreadRequest } from './sql-thread.js';

const { catalogDir, connectors } = workerData as { catalogDir: string | undefined; connectors: string[] };
let session: Promise<SqlSession> | undefined;
const open = (): Promise<SqlSession> =>
  (session ??= SqlCatalog.open(connectors, catalogDir).then(
    (c) => new SqlSession(c),
    (err: unknown) => {
      session = undefined;
      throw err;
    },
  ));

async function answer(r: SqlThreadRequest): Promise<Omit<Extract<SqlThreadReply, { ok: true }>, 'id'>> {
  const s = await open();
  if (r.op === 'catalog')
    return {
      ok: true,
      objects: s.catalog.list().map((o) => ({ name: o.name, kind: o.kind, temporary: o.temporary, sql: o.sql })),
    };
  return {
    ok: true,
    results: await s.execute(r.text, {
      mode: r.mode,
      parallelism: r.parallelism,
      params: r.params,
      ...(r.name ? { name: r.name } : {}),
      checkSetting: (key, value) => void checkpointSettingsOfSets({ [key]: value }),
    }),
  };
}

let chain: Promise<void> = Promise.resolve();
parentPort!.on('message', (m: SqlThreadRequest & { id: number }) => {
  chain = chain.then(async () => {
    let reply: SqlThreadReply;
    try {
      reply = { id: m.id, ...(await answer(m)) };
    } catch (err) {
      const e = err as Error;
      reply =
        err instanceof SqlError
          ? {
              id: m.id,
              ok: false,
              code: 'CLINK_ERR_PLAN',
              message: err.message,
              refusal: { message: err.message, detail: err.detail, position: err.position, excerpt: err.excerpt() },
            }
          : {
              id: m.id,
              ok: false,
              code: err instanceof ClinkError ? err.code : 'CLINK_ERR_INTERNAL',
              message: e.message,
            };
    }
    parentPort!.postMessage(reply);
  });
});
