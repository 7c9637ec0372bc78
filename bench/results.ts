/**
 * What every benchmark reports, and where `npm run bench` writes it: `bench/results/latest.json`
 * (`{ machine, results }`) and `bench/results/latest.html`, the same figures drawn as bar charts in one
 * self-contained page (inline SVG, no scripts).
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

export interface BenchResult {
  /** Unique in a run, e.g. `q5 cluster p=2`. */
  name: string;
  /** The benchmark that produced it (what `--only` names). */
  group: string;
  /** Events (Nexmark accounting: every generated event) or records per second of wall time, median. */
  recordsPerSec?: number;
  /** CPU seconds of every process doing the work, per million events or records, median. */
  cpuSecondsPerMillion?: number;
  /** The same work as a hand-written loop over the same generator: the ceiling of one Node core. */
  baselineRecordsPerSec?: number;
  ratioToBaseline?: number;
  query?: string;
  parallelism?: number;
  /** Worker processes (0: the local runtime in the bench process). */
  workers?: number;
  /** Peak resident memory of each process that ran the job (MB). */
  peakRssMb?: number[];
  runs?: number;
  [more: string]: unknown;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** CPU seconds (user + system) a process has used, from /proc. */
export function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A memory figure of a process's /proc status (VmHWM, VmRSS), in MB. */
function statusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** A process's peak resident memory so far (VmHWM), in MB. */
export const peakRssMb = (pid: number): number => statusMb(pid, 'VmHWM');

/** A process's resident memory now (VmRSS), in MB. */
export const rssMb = (pid: number): number => statusMb(pid, 'VmRSS');

export function machineInfo(): Record<string, unknown> {
  const c = cpus();
  return {
    node: process.version,
    platform: `${process.platform}/${process.arch}`,
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    date: new Date().toISOString(),
  };
}

export async function writeResults(
  dir: string,
  results: BenchResult[],
  options: { quick: boolean },
): Promise<{ json: string; html: string }> {
  await mkdir(dir, { recursive: true });
  const machine = { ...machineInfo(), quick: options.quick };
  const json = join(dir, 'latest.json');
  const html = join(dir, 'latest.html');
  await writeFile(json, JSON.stringify({ machine, results }, null, 2) + '\n');
  await writeFile(html, renderHtml(machine, results));
  return { json, html };
}

const esc = (s: string): string =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const fmt = (n: number): string =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} K` : n.toFixed(n < 10 ? 2 : 0);

/** A horizontal bar chart: one row per bar, optionally a second (baseline) bar under it. */
function barChart(
  title: string,
  unit: string,
  rows: { label: string; value: number; second?: number; secondLabel?: string }[],
): string {
  if (rows.length === 0) return '';
  const max = Math.max(...rows.flatMap((r) => [r.value, r.second ?? 0]));
  const labelW = 190;
  const barW = 520;
  const rowH = rows.some((r) => r.second !== undefined) ? 34 : 22;
  const h = rows.length * rowH + 30;
  const bars = rows
    .map((r, i) => {
      const y = 24 + i * rowH;
      const w = (r.value / max) * barW;
      let s = `<text x="${labelW - 8}" y="${y + 13}" text-anchor="end">${esc(r.label)}</text>`;
      s += `<rect x="${labelW}" y="${y + 2}" width="${w.toFixed(1)}" height="14" fill="#3b82f6"/><text x="${(labelW + w + 6).toFixed(1)}" y="${y + 13}">${fmt(r.value)}</text>`;
      if (r.second !== undefined) {
        const w2 = (r.second / max) * barW;
        s += `<rect x="${labelW}" y="${y + 18}" width="${w2.toFixed(1)}" height="10" fill="#cbd5e1"/><text x="${(labelW + w2 + 6).toFixed(1)}" y="${y + 27}" class="small">${esc(r.secondLabel ?? '')} ${fmt(r.second)}</text>`;
      }
      return s;
    })
    .join('');
  return `<h2>${esc(title)}</h2><svg width="${labelW + barW + 160}" height="${h}" font-family="sans-serif" font-size="12"><text x="${labelW}" y="14" class="small">${esc(unit)}</text>${bars}</svg>`;
}

function renderHtml(machine: Record<string, unknown>, results: BenchResult[]): string {
  const local = results.filter((r) => r.group === 'nexmark-local' && r.recordsPerSec !== undefined);
  const cluster = results.filter((r) => r.group === 'nexmark-cluster' && r.recordsPerSec !== undefined);
  const scaling = [...new Set(cluster.map((r) => r.query!))].flatMap((q) => {
    const one = local.find((r) => r.query === q);
    return [
      ...(one ? [{ label: `${q} local p=1`, value: one.recordsPerSec! }] : []),
      ...cluster
        .filter((r) => r.query === q)
        .map((r) => ({ label: `${q} 2 workers p=${r.parallelism}`, value: r.recordsPerSec! })),
    ];
  });
  const rows = results
    .map((r) => {
      const rest = Object.entries(r)
        .filter(
          ([k]) =>
            ![
              'name',
              'group',
              'recordsPerSec',
              'cpuSecondsPerMillion',
              'baselineRecordsPerSec',
              'ratioToBaseline',
            ].includes(k),
        )
        .map(
          ([k, v]) =>
            `${k}=${typeof v === 'number' ? fmt(v) : Array.isArray(v) ? v.map((x) => (typeof x === 'number' ? x.toFixed(0) : String(x))).join('/') : String(v)}`,
        )
        .join(', ');
      const cell = (v: number | undefined, f: (n: number) => string = fmt): string =>
        `<td>${v === undefined ? '' : f(v)}</td>`;
      return `<tr><td>${esc(r.name)}</td>${cell(r.recordsPerSec)}${cell(r.cpuSecondsPerMillion, (n) => n.toFixed(3))}${cell(r.baselineRecordsPerSec)}${cell(r.ratioToBaseline, (n) => `${(100 * n).toFixed(0)}%`)}<td class="small">${esc(rest)}</td></tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>clink benchmarks</title>
<style>body{font-family:sans-serif;margin:2em;color:#1e293b}table{border-collapse:collapse}td,th{border-bottom:1px solid #e2e8f0;padding:4px 10px;text-align:right}td:first-child,th:first-child,td:last-child{text-align:left}.small{font-size:11px;fill:#475569;color:#475569}</style>
</head><body>
<h1>clink benchmarks</h1>
<p class="small">${esc(
    Object.entries(machine)
      .map(([k, v]) => `${k}: ${String(v)}`)
      .join(' · '),
  )}</p>
${barChart(
  'Nexmark on the local runtime, parallelism 1 (events/s; grey: hand-written loop over the same generator)',
  'events per second, median',
  local.map((r) => ({
    label: r.query ?? r.name,
    value: r.recordsPerSec!,
    ...(r.baselineRecordsPerSec ? { second: r.baselineRecordsPerSec, secondLabel: 'loop' } : {}),
  })),
)}
${barChart('Scaling: local runtime vs 2 worker processes', 'events per second, median', scaling)}
<h2>Every figure</h2>
<table><tr><th>benchmark</th><th>records/s</th><th>CPU-s per M</th><th>baseline/s</th><th>of baseline</th><th>more</th></tr>
${rows}
</table>
</body></html>
`;
}
