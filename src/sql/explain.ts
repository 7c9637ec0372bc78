/**
 * EXPLAIN's text: the optimized logical plan as an indented tree (one node a line, as Flink prints its
 * plans), then the job graph it becomes: each operator with its parallelism and the edges between them.
 * Golden tests compare this text, so it names nothing that changes between runs.
 */
import type { JobGraphSpec } from '../plan/index.js';
import type { Expr } from './ast.js';
import {
  inputsOf,
  isUpdating,
  type AggregateCall,
  type LogicalNode,
  type NamedExpr,
  type WindowDef,
} from './logical.js';
import type { SqlSink } from './physical.js';
import { printExpr } from './printer.js';
import { scanProjection } from './scan.js';

const named = (xs: readonly NamedExpr[]): string =>
  xs
    .map((x) =>
      x.expr.kind === 'column' && x.expr.name.parts[0] === x.name ? x.name : `${printExpr(x.expr)} AS ${x.name}`,
    )
    .join(', ');

const call = (a: AggregateCall): string =>
  `${a.fn}(${a.distinct ? 'DISTINCT ' : ''}${a.arg ? printExpr(a.arg) : '*'}) AS ${a.name}`;

function window(w: WindowDef): string {
  if (w.cascade) return `${window({ ...w, cascade: undefined })} of ${w.cascade.start}, ${w.cascade.end}`;
  const time = `${w.time === 'processing' ? 'PROCTIME ' : ''}${w.timeField}`;
  switch (w.kind) {
    case 'TUMBLE':
      return `TUMBLE(time=[${time}], size=[${w.sizeMs} ms])`;
    case 'HOP':
      return `HOP(time=[${time}], slide=[${w.slideMs} ms], size=[${w.sizeMs} ms])`;
    case 'CUMULATE':
      return `CUMULATE(time=[${time}], step=[${w.slideMs} ms], size=[${w.sizeMs} ms])`;
    case 'SESSION':
      return `SESSION(time=[${time}], gap=[${w.gapMs} ms])`;
  }
}

function line(n: LogicalNode): string {
  switch (n.kind) {
    case 'scan': {
      const parts = [`table=[${n.table}]`, `connector=[${n.connector}]`];
      if (n.filter) parts.push(`filter=[${printExpr(n.filter)}]`);
      parts.push(`project=[${named(n.project ?? scanProjection(n))}]`);
      if (n.watermark)
        parts.push(`watermark=[${n.watermark.column}${n.watermark.delayMs ? ` - ${n.watermark.delayMs} ms` : ''}]`);
      return `TableSourceScan(${parts.join(', ')})`;
    }
    case 'filter':
      return `Filter(condition=[${printExpr(n.condition)}])`;
    case 'project':
      return `Project(select=[${named(n.exprs)}])`;
    case 'windowTvf':
      return `WindowTableFunction(window=[${window(n.window)}])`;
    case 'aggregate': {
      const keys = n.keys.map((k) => (isRef(k.expr, k.name) ? k.name : `${printExpr(k.expr)} AS ${k.name}`));
      const head = n.window ? `WindowAggregate(window=[${window(n.window)}], ` : 'GroupAggregate(';
      return `${head}groupBy=[${keys.join(', ')}], select=[${[...n.keys.map((k) => k.name), ...n.aggs.map(call)].join(', ')}])`;
    }
    case 'union':
      return `Union(all=[true], fields=[${n.fields.map((f) => f.name).join(', ')}])`;
    case 'over': {
      const frame =
        n.frame.preceding === null
          ? 'UNBOUNDED PRECEDING'
          : n.frame.unit === 'ROWS'
            ? `${n.frame.preceding} PRECEDING`
            : `${n.frame.preceding} ms PRECEDING`;
      return `OverAggregate(partitionBy=[${n.partitionBy.map(printExpr).join(', ')}], orderBy=[${n.orderField}], ${n.frame.unit}=[${frame} AND CURRENT ROW], select=[${n.aggs.map(call).join(', ')}])`;
    }
    case 'rank':
      return `WindowRank(partitionBy=[${n.partitionBy.map(printExpr).join(', ')}], orderBy=[${n.orderBy.map((o) => `${printExpr(o.expr)}${o.descending ? ' DESC' : ''}`).join(', ')}], limit=[${n.limit ?? 'none'}], rank=[${n.rankField}])`;
    case 'join': {
      const keys = n.leftKeys.map((k, i) => `${printExpr(k)} = ${printExpr(n.rightKeys[i]!)}`);
      const kind = n.window
        ? `WindowJoin(window=[${window(n.window)}], `
        : n.interval
          ? `IntervalJoin(right.ts - left.ts=[${n.interval.lowerMs} ms, ${n.interval.upperMs} ms], `
          : 'Join(';
      return `${kind}type=[inner], keys=[${keys.join(', ')}]${n.condition ? `, where=[${printExpr(n.condition)}]` : ''}, fields=[${n.fields.map((f) => f.name).join(', ')}])`;
    }
  }
}

const isRef = (e: Expr, name: string): boolean => e.kind === 'column' && e.name.parts[0] === name;

function tree(n: LogicalNode, indent: string, out: string[]): void {
  out.push(`${indent}${line(n)}`);
  const inputs = n.kind === 'aggregate' && n.window && n.input.kind === 'windowTvf' ? [n.input.input] : inputsOf(n);
  for (const i of inputs) tree(i, indent === '' ? '+- ' : `   ${indent}`, out);
}

export function explainText(queries: readonly { plan: LogicalNode; sink: SqlSink }[], spec: JobGraphSpec): string {
  const out = ['== Optimized Logical Plan =='];
  for (const { plan, sink } of queries) {
    const fields = plan.fields.map((f) => f.name).join(', ');
    out.push(
      sink.kind === 'collect'
        ? `Collect(name=[${sink.name}], fields=[${fields}]${isUpdating(plan) ? ', updates=[materialized]' : ''})`
        : `Sink(table=[${sink.table}], connector=[${sink.connector}], fields=[${fields}])`,
    );
    tree(plan, '+- ', out);
  }
  out.push('', '== Job Graph ==');
  for (const o of spec.operators) {
    const inputs = spec.edges
      .filter((e) => e.target === o.id)
      .map((e) => `${spec.operators.find((x) => x.id === e.source)!.name} (${e.kind})`);
    out.push(
      `${o.name}  [${o.type}, parallelism ${o.parallelism}]${inputs.length > 0 ? `  <- ${inputs.join(', ')}` : ''}`,
    );
  }
  return out.join('\n');
}
