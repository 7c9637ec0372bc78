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
import type { CheckpointBench } from './checkpoint.js';
import type { RecoveryResult } from './recovery.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const wanted = args.filter((a) => !a.startsWith('--'));
const names = wanted.length > 0 ? CASE_NAMES.filter((n) => wanted.some((w) => n.includes(w))) : CASE_NAMES;
// `npm run bench protocol` runs only the codec benchmarks.
const casesFile = fileURLToPath(new URL('./cases.ts', import.meta.url));
const fmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** Run one bench script in its own process (no shared JIT state); its JSON output lines. Exits on failure. */
function runScript(what: string, file: string, args: string[] = []): string[] {
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { encoding: 'utf8' });
  if (r.status !== 0) {
    process.stderr.write(`${what} failed:\n${r.stderr}\n`);
    process.exit(1);
  }
  return r.stdout.trim().split('\n');
}

const lastJson = <T>(lines: string[]): T => JSON.parse(lines.at(-1)!) as T;
const script = (name: string): string => fileURLToPath(new URL(`./${name}`, import.meta.url));
/** Whether a section was asked for (all are, when no case names were given). */
const wants = (section: string): boolean => wanted.length === 0 || wanted.some((w) => section.includes(w));

const results: CaseResult[] = [];
for (const name of names) {
  const res = lastJson<CaseResult>(runScript(`bench case '${name}'`, casesFile, [name]));
  results.push(res);
  if (!json) {
    const ratio = (100 * res.engineRecordsPerSec) / res.loopRecordsPerSec;
    process.stdout.write(
      `${name.padEnd(30)} engine ${fmt.format(res.engineRecordsPerSec).padStart(12)} rec/s   loop ${fmt.format(res.loopRecordsPerSec).padStart(13)} rec/s   engine/loop ${ratio.toFixed(1)}%\n`,
    );
  }
}
const protocol: ThroughputResult[] = [];
if (wants('protocol')) {
  for (const line of runScript('protocol bench', script('protocol.ts'), ['--run'])) {
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
if (wants('cluster')) {
  cluster = lastJson<LatencyResult>(runScript('cluster bench', script('cluster.ts'), ['--run']));
  if (!json) {
    const c = cluster;
    process.stdout.write(
      `${c.name}: submit->RUNNING median ${c.medianMs.running} ms (p90 ${c.p90Ms.running}, cold ${c.coldMs.running}); submit->completed median ${c.medianMs.completed} ms (p90 ${c.p90Ms.completed}, cold ${c.coldMs.completed}); ${c.runs} runs\n`,
    );
  }
}
let dataplane: { results: DataPlaneResult[]; serialisation?: { share: number } } | undefined;
if (wants('dataplane')) {
  dataplane = {
    results: lastJson<DataPlaneResult[]>(runScript('data-plane bench', script('dataplane.ts'))),
    serialisation: lastJson<{ serialisation: { share: number } }>(runScript('data-plane profile', script('dataplane.ts'), ['--profile'])).serialisation,
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
if (wants('submit')) {
  submit = lastJson<SubmitLatency>(runScript('submit bench', script('submit.ts')));
  if (!json) {
    const s = submit;
    process.stdout.write(
      `submit of a ${(s.moduleBytes / 1e6).toFixed(1)} MB job module: clink submit ${s.cliFirstMs.toFixed(0)} ms first, ${s.cliRepeatMedianMs.toFixed(0)} ms repeated; in a running client ${s.inProcessFirstMs.toFixed(0)} ms first (upload), ${s.inProcessRepeatMedianMs.toFixed(0)} ms repeated (reference)\n`,
    );
  }
}
let checkpoint: CheckpointBench[] | undefined;
if (wants('checkpoint')) {
  checkpoint = lastJson<CheckpointBench[]>(runScript('checkpoint bench', script('checkpoint.ts')));
  for (const c of json ? [] : checkpoint) {
    process.stdout.write(
      `${c.job}, checkpoints every 1 s, ${fmt.format(c.keys)} keys: ${fmt.format(c.withRecordsPerSec)} rec/s vs ${fmt.format(c.withoutRecordsPerSec)} without (${(100 * (1 - c.withRecordsPerSec / c.withoutRecordsPerSec)).toFixed(0)}% cost); ` +
        `checkpoint median ${c.checkpointMsMedian.toFixed(0)} ms, max ${c.checkpointMsMax.toFixed(0)} ms, ${(c.checkpointBytes / 1e6).toFixed(1)} MB, ${c.checkpoints} taken; ` +
        `worst event-loop stall ${c.worstLoopStallMsWith.toFixed(0)} ms (${c.worstLoopStallMsWithout.toFixed(0)} ms without)\n`,
    );
  }
}
let recovery: RecoveryResult[] | undefined;
if (wants('recovery')) {
  recovery = lastJson<RecoveryResult[]>(runScript('recovery bench', script('recovery.ts')));
  for (const r of json ? [] : recovery) {
    process.stdout.write(
      `recovery, ${r.subtasks} subtasks on ${r.workers} workers, kill -9 of one: lost after ${r.detectMs} ms, redeployed after ${r.redeployMs} ms, ` +
        `first checkpoint after the restart ${r.recoveredMs} ms after the kill (restored from checkpoint ${r.restoredFrom})\n`,
    );
  }
}
if (json) process.stdout.write(JSON.stringify({ queries: results, protocol, cluster, dataplane, submit, checkpoint, recovery }, null, 2) + '\n');
