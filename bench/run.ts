/**
 * `npm run bench`: runs every benchmark case in its own process and prints records/s for the engine
 * and for a hand-written loop doing the same work, with the ratio. Pass case names to run a subset;
 * `--json` prints machine-readable results.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CASE_NAMES, type CaseResult } from './cases.js';
import type { ThroughputResult } from './protocol.js';
import type { LatencyResult } from './cluster.js';
import type { DataPlaneResult } from './dataplane.js';
import type { SubmitLatency } from './submit.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const wanted = args.filter((a) => !a.startsWith('--'));
const names = wanted.length > 0 ? CASE_NAMES.filter((n) => wanted.some((w) => n.includes(w))) : CASE_NAMES;
// `npm run bench protocol` runs only the codec benchmarks.
const casesFile = fileURLToPath(new URL('./cases.ts', import.meta.url));
const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

const results: CaseResult[] = [];
for (const name of names) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', casesFile, name], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`bench case '${name}' failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as CaseResult;
  results.push(res);
  if (!json) {
    const ratio = (100 * res.engineRecordsPerSec) / res.loopRecordsPerSec;
    process.stdout.write(
      `${name.padEnd(30)} engine ${fmt.format(res.engineRecordsPerSec).padStart(12)} rec/s   loop ${fmt.format(res.loopRecordsPerSec).padStart(13)} rec/s   engine/loop ${ratio.toFixed(1)}%\n`,
    );
  }
}
const protocol: ThroughputResult[] = [];
if (wanted.length === 0 || wanted.some((w) => 'protocol'.includes(w))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./protocol.ts', import.meta.url)), '--run'], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`protocol bench failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  for (const line of r.stdout.trim().split('\n')) {
    const res = JSON.parse(line) as ThroughputResult;
    protocol.push(res);
    if (!json) {
      const mb = (n: number): string => ((n * res.bytes) / 1e6).toFixed(0);
      process.stdout.write(
        `${res.name.padEnd(30)} encode ${fmt.format(res.encodePerSec).padStart(10)}/s (${mb(res.encodePerSec)} MB/s)   decode ${fmt.format(res.decodePerSec).padStart(10)}/s (${mb(res.decodePerSec)} MB/s)   ${res.bytes} bytes\n`,
      );
    }
  }
}
let cluster: LatencyResult | undefined;
if (wanted.length === 0 || wanted.some((w) => 'cluster'.includes(w))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./cluster.ts', import.meta.url)), '--run'], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`cluster bench failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  cluster = JSON.parse(r.stdout.trim().split('\n').pop()!) as LatencyResult;
  if (!json) {
    const c = cluster;
    process.stdout.write(
      `${c.name}: submit->RUNNING median ${c.medianMs.running} ms (p90 ${c.p90Ms.running}, cold ${c.coldMs.running}); submit->completed median ${c.medianMs.completed} ms (p90 ${c.p90Ms.completed}, cold ${c.coldMs.completed}); ${c.runs} runs\n`,
    );
  }
}
let dataplane: { results: DataPlaneResult[]; serialisation?: { share: number } } | undefined;
if (wanted.length === 0 || wanted.some((w) => 'dataplane'.includes(w))) {
  const script = fileURLToPath(new URL('./dataplane.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8' });
  const prof = spawnSync(process.execPath, ['--import', 'tsx', script, '--profile'], { encoding: 'utf8' });
  if (r.status !== 0 || prof.status !== 0) {
    process.stderr.write(`data-plane bench failed:\n${r.stderr}${prof.stderr}\n`);
    process.exit(1);
  }
  dataplane = {
    results: JSON.parse(r.stdout.trim().split('\n').pop()!) as DataPlaneResult[],
    serialisation: (JSON.parse(prof.stdout.trim().split('\n').pop()!) as { serialisation: { share: number } }).serialisation,
  };
  if (!json) {
    for (const d of dataplane.results) {
      process.stdout.write(
        `${`${d.job} on 2 workers, p=${d.parallelism}`.padEnd(30)} ${fmt.format(d.recordsPerSec).padStart(12)} rec/s   ${d.cpuSecondsPerMillion.toFixed(3)} CPU-s per M records   channels local=${d.edges.local} socket=${d.edges.socket}\n`,
      );
    }
    const q0 = (p: number): number => dataplane!.results.find((d) => d.job === 'q0' && d.parallelism === p)!.cpuSecondsPerMillion;
    process.stdout.write(`q0 CPU per event, parallelism 4 over 1: ${(q0(4) / q0(1)).toFixed(2)}x\n`);
    process.stdout.write(`serialisation share of worker CPU, keyed-count p=2: ${(100 * dataplane.serialisation!.share).toFixed(1)}%\n`);
  }
}
let submit: SubmitLatency | undefined;
if (wanted.length === 0 || wanted.some((w) => 'submit'.includes(w))) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./submit.ts', import.meta.url))], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`submit bench failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  submit = JSON.parse(r.stdout.trim().split('\n').pop()!) as SubmitLatency;
  if (!json) {
    const s = submit;
    process.stdout.write(
      `submit of a ${(s.moduleBytes / 1e6).toFixed(1)} MB job module: clink submit ${s.cliFirstMs.toFixed(0)} ms first, ${s.cliRepeatMedianMs.toFixed(0)} ms repeated; in a running client ${s.inProcessFirstMs.toFixed(0)} ms first (upload), ${s.inProcessRepeatMedianMs.toFixed(0)} ms repeated (reference)\n`,
    );
  }
}
if (json) process.stdout.write(JSON.stringify({ queries: results, protocol, cluster, dataplane, submit }, null, 2) + '\n');
