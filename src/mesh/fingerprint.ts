/**
 * The topology fingerprint of a mesh run (docs/design/017-mesh-mode.md): what every member must agree
 * on before it runs anything. The leader sends its shape with the member set; a worker whose own shape
 * differs is refused with what differs, named (an operator's parallelism, the job module, an edge).
 * The member set itself is not part of it: placement is derived from the members, not compared.
 */
import { createHash } from 'node:crypto';
import { createPhysicalPlan, type JobGraphSpec } from '../plan/index.js';

/** The parts a fingerprint hashes, kept so a mismatch can be named. */
export interface TopologyShape {
  /** SHA-256 of the job module's bundle. */
  module: string;
  maxParallelism: number;
  /** Each task: its id, its parallelism, and its chain of operators (`<id>:<type>`). */
  tasks: { id: string; parallelism: number; chain: string[] }[];
  /** Each edge: `<source> -> <target> (<kind>, input <n>)`. */
  edges: string[];
}

export function topologyShape(spec: JobGraphSpec, moduleSha256: string): TopologyShape {
  const plan = createPhysicalPlan(spec);
  return {
    module: moduleSha256,
    maxParallelism: spec.maxParallelism,
    tasks: plan.tasks.map((t) => ({
      id: t.id,
      parallelism: t.parallelism,
      chain: t.operators.map((o) => `${o.id}:${o.type}`),
    })),
    edges: spec.edges.map(
      (e) =>
        `${e.source} -> ${e.target} (${e.kind}, input ${e.inputIndex}${e.output ? `, side output ${e.output}` : ''})`,
    ),
  };
}

/** The fingerprint: SHA-256 (hex) of the shape's canonical form. */
export function topologyFingerprint(shape: TopologyShape): string {
  return createHash('sha256')
    .update(JSON.stringify([shape.module, shape.maxParallelism, shape.tasks, shape.edges]))
    .digest('hex');
}

/** What differs between the leader's shape and this worker's, as one line; undefined when nothing does. */
export function shapeDifference(leader: TopologyShape, mine: TopologyShape): string | undefined {
  if (topologyFingerprint(leader) === topologyFingerprint(mine)) return undefined;
  if (leader.module !== mine.module)
    return `the job module differs: the leader runs ${leader.module.slice(0, 12)}, this worker ${mine.module.slice(0, 12)}; start every member with the same job file and version`;
  const theirs = new Map(leader.tasks.map((t) => [t.id, t]));
  const ours = new Map(mine.tasks.map((t) => [t.id, t]));
  for (const t of mine.tasks) {
    const l = theirs.get(t.id);
    if (!l)
      return `task '${t.id}' is not in the leader's plan; the leader's tasks are ${[...theirs.keys()].join(', ')}`;
    if (l.parallelism !== t.parallelism)
      return `task '${t.id}' runs at parallelism ${l.parallelism} at the leader and ${t.parallelism} here; give every member the same -p and params`;
    if (l.chain.join() !== t.chain.join())
      return `task '${t.id}' chains ${l.chain.join(' -> ')} at the leader and ${t.chain.join(' -> ')} here`;
  }
  const missing = leader.tasks.find((t) => !ours.has(t.id));
  if (missing) return `the leader's task '${missing.id}' is not in this worker's plan`;
  if (leader.maxParallelism !== mine.maxParallelism)
    return `max parallelism (key groups) is ${leader.maxParallelism} at the leader and ${mine.maxParallelism} here`;
  const edge = mine.edges.find((e) => !leader.edges.includes(e)) ?? leader.edges.find((e) => !mine.edges.includes(e));
  return `the job graphs differ${edge ? ` at edge ${edge}` : ''}`;
}
