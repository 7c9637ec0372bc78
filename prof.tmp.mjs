import { readFileSync, readdirSync } from 'node:fs';
const f = readdirSync('/tmp/prof').map(f=>[f, readFileSync('/tmp/prof/'+f).length]).sort((a,b)=>b[1]-a[1])[0][0];
const p = JSON.parse(readFileSync('/tmp/prof/' + f));
const self = new Map(); const byId = new Map(p.nodes.map(n => [n.id, n]));
const dt = p.timeDeltas; const counts = new Map();
p.samples.forEach((s, i) => counts.set(s, (counts.get(s) ?? 0) + (dt[i] ?? 0)));
for (const [id, t] of counts) { const n = byId.get(id); const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + t); }
console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([k, t]) => `${(t / 1000).toFixed(0)}ms ${k}`).join('\n'));
