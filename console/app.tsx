/**
 * The clink console, served by the coordinator at /: an overview of workers, slots and jobs; a job's
 * graph with live rates and backpressure, its throughput and checkpoint durations over time, its
 * checkpoints, restarts and rescales; workers; a submit form. It polls the HTTP API every second; with
 * CLINK_AUTH_TOKEN set, it asks for the token once and sends it as a bearer token.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, setToken, Unauthorized, type Checkpoint, type Departed, type Worker } from './api.js';
import { Checkpoints } from './checkpoints.js';
import { ago, Chart, fmt, JobGraph, Table, when } from './views.js';

const POLL_MS = 1000;
const HISTORY_POINTS = 300;

function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = (): void => setRoute(location.hash.slice(1) || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** Call `load` now and every second; its latest value, or the error that stopped it. */
function usePoll<T>(load: () => Promise<T>, key: string): { value?: T; error?: Error } {
  const [state, setState] = useState<{ value?: T; error?: Error }>({});
  useEffect(() => {
    let live = true;
    const tick = async (): Promise<void> => {
      try {
        const value = await load();
        if (live) setState({ value });
      } catch (error) {
        if (live) setState((s) => ({ ...s, error: error as Error }));
      }
    };
    void tick();
    const t = setInterval(() => void tick(), POLL_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [key]);
  return state;
}

function Login({ retry }: { retry: () => void }) {
  const [token, setValue] = useState('');
  return (
    <form
      class="login"
      data-testid="login"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(token);
        retry();
      }}
    >
      <h2>This cluster needs its token</h2>
      <p>Enter the value of CLINK_AUTH_TOKEN the coordinator was started with.</p>
      <input
        type="password"
        value={token}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        placeholder="token"
        aria-label="token"
      />
      <button type="submit">Sign in</button>
    </form>
  );
}

function Overview() {
  const jobs = usePoll(api.jobs, 'jobs');
  const workers = usePoll(api.workers, 'workers');
  const [rate, setRate] = useState<number[][]>([[], []]);
  const [last, setLast] = useState<{ at: number; records: number } | undefined>();
  const running = (jobs.value ?? []).filter(
    (j) => j.state === 'RUNNING' || j.state === 'RESTARTING' || j.state === 'RESCALING' || j.state === 'DEPLOYING',
  );
  useEffect(() => {
    if (!jobs.value) return;
    const now = Date.now();
    const records = running.reduce((n, j) => n + j.sourceRecords, 0);
    if (last && now > last.at) {
      const perSecond = Math.max(0, ((records - last.records) * 1000) / (now - last.at));
      setRate(([t, r]) => [[...t!, now / 1000].slice(-HISTORY_POINTS), [...r!, perSecond].slice(-HISTORY_POINTS)]);
    }
    setLast({ at: now, records });
  }, [jobs.value]);
  const w = workers.value;
  return (
    <div>
      <div class="cards">
        <div class="card" data-testid="card-workers">
          <b>{w?.workers.length ?? '…'}</b> workers
        </div>
        <div class="card" data-testid="card-slots">
          <b>{w ? w.slotsTotal - w.slotsFree : '…'}</b> of {w?.slotsTotal ?? '…'} slots used
        </div>
        <div class="card" data-testid="card-running">
          <b>{running.length}</b> running jobs
        </div>
        <div class="card" data-testid="card-throughput">
          <b>{fmt(rate[1]!.at(-1) ?? 0)}</b> records/s read
        </div>
      </div>
      <Chart title="records read per second" series={['records/s']} data={rate} />
      <h2>Jobs</h2>
      <Table
        testId="jobs"
        head={['job', 'name', 'state', 'parallelism', 'records in', 'records out', 'started']}
        rows={(jobs.value ?? []).map((j) => [
          <a href={`#/jobs/${j.jobId}`}>{j.jobId}</a>,
          j.name,
          <span class={`state ${j.state}`}>{j.state}</span>,
          j.parallelism,
          fmt(j.sourceRecords),
          fmt(j.sinkRecords),
          when(j.startedAt),
        ])}
      />
      <h2>Workers</h2>
      <WorkerTable workers={w?.workers ?? []} />
      <h2>Workers lost or retired</h2>
      <DepartedTable departed={w?.departed ?? []} />
    </div>
  );
}

function WorkerTable({ workers }: { workers: Worker[] }) {
  return (
    <Table
      testId="workers"
      head={['worker', 'address', 'slots used', 'slots', 'subtasks', 'last heartbeat', 'previous session']}
      rows={workers.map((w) => [
        <a href={`#/workers/${w.workerId}`}>{w.workerId}</a>,
        w.address,
        w.slotsUsed,
        w.slotsTotal,
        w.subtasks.length,
        `${ago(w.lastSeenMsAgo)} ago`,
        w.lastEnded ? `${w.lastEnded.state}: ${w.lastEnded.cause}` : '',
      ])}
    />
  );
}

function DepartedTable({ departed }: { departed: Departed[] }) {
  return (
    <Table
      head={['worker', 'session', 'ended', 'cause', 'at']}
      rows={[...departed].reverse().map((d) => [d.workerId, d.session, d.state, d.cause, when(d.at)])}
    />
  );
}

function JobPage({ id }: { id: string }) {
  const job = usePoll(() => api.job(id), `job-${id}`);
  const checkpoints = usePoll(() => api.checkpoints(id), `ckpt-${id}`);
  const [series, setSeries] = useState<number[][]>([[], [], []]);
  const [notice, setNotice] = useState('');
  useEffect(() => {
    const tasks = job.value?.graph?.tasks;
    if (!tasks) return;
    const sources = tasks.filter((t) => !job.value!.graph!.edges.some((e) => e.target === t.id));
    const sinks = tasks.filter((t) => !job.value!.graph!.edges.some((e) => e.source === t.id));
    const inRate = sources.reduce((n, t) => n + t.metrics.recordsInPerSecond, 0);
    const outRate = sinks.reduce((n, t) => n + t.metrics.recordsInPerSecond, 0);
    setSeries(([t, a, b]) => [
      [...t!, Date.now() / 1000].slice(-HISTORY_POINTS),
      [...a!, inRate].slice(-HISTORY_POINTS),
      [...b!, outRate].slice(-HISTORY_POINTS),
    ]);
  }, [job.value]);
  const j = job.value;
  if (!j) return <p>{job.error ? job.error.message : 'loading…'}</p>;
  const ckpts: Checkpoint[] = checkpoints.value ?? [];
  const act = (p: Promise<{ message: string }>): void =>
    void p.then(
      (r) => setNotice(r.message),
      (e: Error) => setNotice(e.message),
    );
  const ended = j.finishedAt !== undefined;
  return (
    <div>
      <h2>
        {j.name}{' '}
        <span class={`state ${j.state}`} data-testid="job-state">
          {j.state}
        </span>
      </h2>
      <p class="meta">
        job {j.jobId} · parallelism {j.parallelism} · {j.guarantee.level}
        {j.guarantee.limitedBy ? ` (limited by ${j.guarantee.limitedBy})` : ''} · running for {ago(j.durationMs)} ·{' '}
        {fmt(j.sourceRecords)} records in, {fmt(j.sinkRecords)} out
      </p>
      {j.error ? <p class="error">{j.error}</p> : null}
      <div class="actions">
        <button
          disabled={ended}
          data-testid="savepoint"
          onClick={() => {
            const dir = prompt(
              'Savepoint directory (on the coordinator and workers)',
              j.checkpointConfig?.checkpointDir ? `${j.checkpointConfig.checkpointDir}/savepoint-${Date.now()}` : '',
            );
            if (dir) act(api.savepoint(j.jobId, dir));
          }}
        >
          Savepoint
        </button>
        <button
          disabled={ended}
          data-testid="cancel"
          onClick={() => confirm(`Cancel job ${j.jobId}?`) && act(api.cancel(j.jobId))}
        >
          Cancel
        </button>
        <span class="notice" data-testid="notice">
          {notice}
        </span>
      </div>
      {j.graph ? <JobGraph tasks={j.graph.tasks} edges={j.graph.edges} /> : null}
      <div class="charts">
        <Chart title="throughput" series={['read/s', 'written/s']} data={series} />
        <Chart
          title="checkpoint duration (ms)"
          series={['duration', 'alignment']}
          data={[
            ckpts.map((c) => c.completedAtMs / 1000),
            ckpts.map((c) => c.durationMs),
            ckpts.map((c) => c.alignmentMs),
          ]}
        />
      </div>
      <h3>
        Checkpoints
        {j.pendingCheckpoint
          ? ` (checkpoint ${j.pendingCheckpoint.checkpointId} in flight: ${j.pendingCheckpoint.acked} of ${j.pendingCheckpoint.of})`
          : ''}
      </h3>
      <Checkpoints checkpoints={ckpts} />
      <h3>Restarts</h3>
      <Table
        testId="restarts"
        head={['at', 'cause', 'from checkpoint', 'attempt']}
        rows={j.restarts.map((r) => [when(r.at), r.cause, r.restoredFrom, r.attempt])}
      />
      <h3>Rescales</h3>
      <Table
        testId="rescales"
        head={['at', 'changes', 'how', 'cause', 'from checkpoint', 'paused']}
        rows={(j.rescales ?? []).map((r) => [
          when(r.at),
          r.changes.join(', '),
          r.mode === 'hot-cutover' ? 'in place' : 'drain and replan',
          r.cause,
          r.restoredFrom,
          r.runningAt === undefined ? 'redeploying' : `${r.runningAt - r.at} ms`,
        ])}
      />
      {j.autoscaler ? (
        <>
          <h3>
            Autoscaler ({j.autoscaler.min}..{j.autoscaler.max})
          </h3>
          <Table
            testId="autoscaler"
            head={['at', 'decision', 'reason', 'outcome']}
            rows={[...j.autoscaler.decisions].reverse().map((d) => [when(d.at), d.action, d.reason, d.outcome ?? ''])}
          />
        </>
      ) : null}
      <h3>Retries</h3>
      <Table
        head={['at', 'subtask', 'cause', 'retry']}
        rows={j.retries.map((r) => [when(r.at), r.subtask, r.cause, r.retry])}
      />
      <h3>Subtasks</h3>
      <Table
        head={['subtask', 'worker', 'attempt', 'state']}
        rows={j.subtasks.map((s) => [
          `${s.taskId}#${s.index}`,
          <a href={`#/workers/${s.workerId}`}>{s.workerId}</a>,
          s.attempt,
          s.finished ? (s.error ?? 'finished') : 'running',
        ])}
      />
    </div>
  );
}

function WorkerPage({ id }: { id: string }) {
  const workers = usePoll(api.workers, 'workers');
  const w = workers.value?.workers.find((x) => x.workerId === id);
  const departed = (workers.value?.departed ?? []).filter((d) => d.workerId === id);
  return (
    <div>
      <h2>Worker {id}</h2>
      {w ? (
        <p class="meta">
          session {w.session} · {w.address} · data host {w.dataHost} · {w.slotsUsed} of {w.slotsTotal} slots used ·
          registered {when(w.registeredAt)} · last heartbeat {ago(w.lastSeenMsAgo)} ago
        </p>
      ) : (
        <p class="error">not connected now</p>
      )}
      <h3>Subtasks</h3>
      <Table
        head={['job / subtask']}
        rows={(w?.subtasks ?? []).map((s) => [<a href={`#/jobs/${s.split('/')[0]}`}>{s}</a>])}
      />
      <h3>Sessions that ended</h3>
      <DepartedTable departed={departed} />
    </div>
  );
}

function SubmitPage() {
  const [message, setMessage] = useState('');
  return (
    <form
      class="submit"
      data-testid="submit-form"
      onSubmit={(e) => {
        e.preventDefault();
        const form = e.currentTarget as HTMLFormElement;
        const data = new FormData(form);
        const file = data.get('module') as File | null;
        if (!file || file.size === 0) return setMessage('choose a job file (.ts or .js)');
        const query = new URLSearchParams();
        for (const key of ['parallelism', 'checkpoint_dir', 'checkpoint_interval_ms', 'name']) {
          const v = String(data.get(key) ?? '').trim();
          if (v) query.set(key, v);
        }
        for (const line of String(data.get('params') ?? '')
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean))
          query.append('param', line);
        setMessage('submitting…');
        api.submit(file, query).then(
          (r) => (location.hash = `#/jobs/${r.jobId}`),
          (err: Error) => setMessage(err.message),
        );
      }}
    >
      <h2>Submit a job</h2>
      <label>
        Job file <input type="file" name="module" accept=".ts,.mts,.js,.mjs" data-testid="submit-file" />
      </label>
      <label>
        Parallelism <input name="parallelism" type="number" min="1" placeholder="1" />
      </label>
      <label>
        Name <input name="name" placeholder="its defineJob name" />
      </label>
      <label>
        Checkpoint directory <input name="checkpoint_dir" placeholder="none" />
      </label>
      <label>
        Checkpoint interval (ms) <input name="checkpoint_interval_ms" type="number" min="0" placeholder="0" />
      </label>
      <label>
        Params (key=value, one a line) <textarea name="params" rows={3} />
      </label>
      <button type="submit" data-testid="submit-button">
        Submit
      </button>
      <p class="notice" data-testid="submit-message">
        {message}
      </p>
    </form>
  );
}

function App() {
  const route = useRoute();
  const [needsToken, setNeedsToken] = useState(false);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    // One probe decides whether to ask for the token; pages poll on their own.
    api.jobs().then(
      () => setNeedsToken(false),
      (err: unknown) => setNeedsToken(err instanceof Unauthorized),
    );
  }, [attempt]);
  const job = /^\/jobs\/([^/]+)$/.exec(route);
  const worker = /^\/workers\/([^/]+)$/.exec(route);
  return (
    <div class="shell">
      <header>
        <a href="#/" class="brand">
          clink
        </a>
        <nav>
          <a href="#/">Overview</a>
          <a href="#/submit">Submit</a>
        </nav>
      </header>
      <main key={attempt}>
        {needsToken ? (
          <Login retry={() => setAttempt((a) => a + 1)} />
        ) : job ? (
          <JobPage id={decodeURIComponent(job[1]!)} />
        ) : worker ? (
          <WorkerPage id={decodeURIComponent(worker[1]!)} />
        ) : route === '/submit' ? (
          <SubmitPage />
        ) : (
          <Overview />
        )}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
