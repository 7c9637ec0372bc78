/** The console's view of the coordinator's HTTP API: fetches with the token the user gave, if any. */

// The API's shapes are the coordinator's own (types only: nothing of the server is bundled).
import type {
  CompletedCheckpoint,
  DepartedSession,
  JobDetail,
  JobGraphView,
  WorkerView,
} from '../src/coordinator/index.js';

export type Job = JobDetail;
export type GraphTask = JobGraphView['tasks'][number];
export type GraphEdge = JobGraphView['edges'][number];
export type Worker = WorkerView;
export type Departed = DepartedSession;
export type Checkpoint = CompletedCheckpoint;

const TOKEN_KEY = 'clink.token';

/** Thrown when the coordinator wants the cluster token. */
export class Unauthorized extends Error {}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

function headers(): Record<string, string> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(path, {
    ...init,
    headers: { ...headers(), ...(init.headers as Record<string, string> | undefined) },
  });
  if (res.status === 401) throw new Unauthorized('the coordinator needs the cluster token');
  const body = (await res.json().catch(() => ({}))) as T & { code?: string; message?: string };
  if (!res.ok) throw new Error(body.message ?? `${res.status} ${res.statusText}`);
  return body;
}

export const api = {
  jobs: () => call<{ jobs: Job[] }>('/api/v1/jobs').then((r) => r.jobs),
  job: (id: string) => call<Job>(`/api/v1/jobs/${encodeURIComponent(id)}`),
  checkpoints: (id: string) =>
    call<{ checkpoints: Checkpoint[] }>(`/api/v1/jobs/${encodeURIComponent(id)}/checkpoints`).then(
      (r) => r.checkpoints,
    ),
  workers: () =>
    call<{ workers: Worker[]; slotsTotal: number; slotsFree: number; departed: Departed[] }>('/api/v1/workers'),
  cancel: (id: string) =>
    call<{ message: string }>(`/api/v1/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST' }),
  savepoint: (id: string, dir: string) =>
    call<{ message: string; path: string }>(`/api/v1/jobs/${encodeURIComponent(id)}/savepoint`, {
      method: 'POST',
      body: JSON.stringify({ dir }),
      headers: { 'content-type': 'application/json' },
    }),
  submit: (file: File, query: URLSearchParams) => {
    const form = new FormData();
    form.append('module', file, file.name);
    return call<{ jobId: string }>(`/api/v1/jobs?${query.toString()}`, { method: 'POST', body: form });
  },
};
