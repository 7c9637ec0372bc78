/** The console's pieces: the job graph, a time-series chart, tables. */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { GraphEdge, GraphTask } from './api.js';
import { layout, NODE_H, NODE_W, pressureColour } from './layout.js';

export const fmt = (n: number): string =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)} K` : String(Math.round(n));
export const ago = (ms: number): string =>
  ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
export const when = (at: number): string => new Date(at).toLocaleTimeString();

/** The task graph: a box per task (its chained operators), coloured by backpressure; edges say how their channels travel. */
export function JobGraph({ tasks, edges }: { tasks: GraphTask[]; edges: GraphEdge[] }) {
  const { nodes, width, height } = layout(tasks, edges);
  return (
    <svg class="graph" width={width} height={height} viewBox={`0 0 ${width} ${height}`} data-testid="job-graph">
      <defs>
        <marker
          id="arrow"
          viewBox="0 0 10 10"
          refX="10"
          refY="5"
          markerWidth="7"
          markerHeight="7"
          orient="auto-start-reverse"
        >
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#7a8599" />
        </marker>
      </defs>
      {edges.map((e) => {
        const a = nodes.get(e.source);
        const b = nodes.get(e.target);
        if (!a || !b) return null;
        const x1 = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const x2 = b.x;
        const y2 = b.y + NODE_H / 2;
        const socket = e.channels.socket > 0;
        return (
          <g class="edge" key={`${e.source}-${e.target}`} data-kind={e.kind}>
            <path
              d={`M ${x1} ${y1} C ${x1 + 45} ${y1}, ${x2 - 45} ${y2}, ${x2} ${y2}`}
              stroke={socket ? '#5b7bd5' : '#7a8599'}
              stroke-dasharray={socket ? '6 4' : undefined}
              fill="none"
              stroke-width="2"
              marker-end="url(#arrow)"
            />
            <text x={(x1 + x2) / 2} y={(y1 + y2) / 2 - 8} text-anchor="middle" class="edge-label">
              {e.kind} · {e.channels.local} local · {e.channels.socket} socket
            </text>
          </g>
        );
      })}
      {[...nodes.values()].map(({ task, x, y }) => (
        <g class="vertex" key={task.id} data-task={task.id}>
          <rect
            x={x}
            y={y}
            width={NODE_W}
            height={NODE_H}
            rx="8"
            fill="#fff"
            stroke={pressureColour(task.metrics.backpressure)}
            stroke-width="3"
          />
          <text x={x + 10} y={y + 20} class="vertex-name">
            {task.name.length > 30 ? `${task.name.slice(0, 29)}…` : task.name}
          </text>
          <text x={x + 10} y={y + 40} class="vertex-detail">
            ×{task.parallelism} · {fmt(task.metrics.recordsInPerSecond)} in/s · {fmt(task.metrics.recordsOutPerSecond)}{' '}
            out/s
          </text>
          <text x={x + 10} y={y + 60} class="vertex-detail" data-testid="backpressure">
            backpressure {Math.round(task.metrics.backpressure * 100)}% · busy {Math.round(task.metrics.busy * 100)}%
          </text>
        </g>
      ))}
    </svg>
  );
}

/** A line chart over time (uPlot): `series` names each line; `data[0]` is seconds since the epoch. */
export function Chart({ title, series, data }: { title: string; series: string[]; data: number[][] }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    if (!el.current) return;
    const colours = ['#5b7bd5', '#3c9a5f', '#e0a030'];
    plot.current = new uPlot(
      {
        title,
        width: 560,
        height: 200,
        // Time in seconds; one point (or none) spans a minute around it, not uPlot's default of years.
        scales: {
          x: {
            time: true,
            range: (_u, min, max) =>
              min == null || max == null
                ? [Date.now() / 1000 - 60, Date.now() / 1000]
                : min === max
                  ? [min - 30, max + 30]
                  : [min, max],
          },
        },
        series: [{}, ...series.map((label, i) => ({ label, stroke: colours[i % colours.length], width: 2 }))],
        axes: [{}, { size: 60 }],
      },
      data as uPlot.AlignedData,
      el.current,
    );
    return () => plot.current?.destroy();
  }, [title, series.join()]);
  useEffect(() => plot.current?.setData(data as uPlot.AlignedData), [data]);
  return <div class="chart" ref={el} data-testid={`chart-${title}`} />;
}

export function Table({
  head,
  rows,
  testId,
}: {
  head: string[];
  rows: (string | number | preact.JSX.Element)[][];
  testId?: string;
}) {
  return (
    <table data-testid={testId}>
      <thead>
        <tr>
          {head.map((h) => (
            <th key={h}>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 ? (
          <tr>
            <td colSpan={head.length} class="none">
              none
            </td>
          </tr>
        ) : (
          rows.map((r, i) => (
            <tr key={i}>
              {r.map((c, j) => (
                <td key={j}>{c}</td>
              ))}
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}
