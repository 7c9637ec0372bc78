/**
 * A layered layout of a job's task graph: a task's column is the longest path to it from a source, its
 * row its order within the column. Task graphs are small (chains merge most operators), so this is all
 * the layout they need.
 */
import type { GraphEdge, GraphTask } from './api.js';

export interface Placed {
  task: GraphTask;
  x: number;
  y: number;
}

export const NODE_W = 220;
export const NODE_H = 74;
const GAP_X = 190;
const GAP_Y = 30;

export function layout(
  tasks: GraphTask[],
  edges: GraphEdge[],
): { nodes: Map<string, Placed>; width: number; height: number } {
  const column = new Map<string, number>();
  // Tasks come in topological order (sources first): one pass gives each its longest path.
  for (const t of tasks) {
    const ins = edges.filter((e) => e.target === t.id).map((e) => (column.get(e.source) ?? 0) + 1);
    column.set(t.id, Math.max(0, ...ins));
  }
  const rows = new Map<number, number>();
  const nodes = new Map<string, Placed>();
  for (const t of tasks) {
    const c = column.get(t.id)!;
    const r = rows.get(c) ?? 0;
    rows.set(c, r + 1);
    nodes.set(t.id, { task: t, x: 20 + c * (NODE_W + GAP_X), y: 20 + r * (NODE_H + GAP_Y) });
  }
  const columns = Math.max(1, ...[...column.values()].map((c) => c + 1));
  const maxRows = Math.max(1, ...rows.values());
  return {
    nodes,
    width: 40 + columns * NODE_W + (columns - 1) * GAP_X,
    height: 40 + maxRows * NODE_H + (maxRows - 1) * GAP_Y,
  };
}

/** Backpressure as a colour: green when the task keeps up, amber, then red as it waits on downstream. */
export function pressureColour(ratio: number): string {
  if (ratio >= 0.5) return '#d64545';
  if (ratio >= 0.1) return '#e0a030';
  return '#3c9a5f';
}
