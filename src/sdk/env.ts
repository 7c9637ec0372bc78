import { InvalidArgumentError } from '../errors.js';
import type { Connector } from './connector.js';
import { checkParallelism, type GraphBuilder } from './graph.js';
import { checkConnectorOptions, namedConnector } from './named-connectors.js';
import { DataStream } from './stream.js';

/** What a job's build function receives: sources, parameters and job-wide settings. */
export class JobEnvironment {
  private defaultParallelism: number;

  /** @internal */
  constructor(
    private readonly graph: GraphBuilder,
    /** The `--param key=value` pairs given on the command line. */
    readonly params: Readonly<Record<string, string>>,
    parallelism: number,
  ) {
    this.defaultParallelism = parallelism;
  }

  /** The default parallelism of operators that do not set their own. */
  get parallelism(): number {
    return this.defaultParallelism;
  }

  /** @internal Operator ids minted from here on begin with `prefix` (the SQL planner's `sql_`). */
  mintIdsWith(prefix: string): void {
    this.graph.idPrefix = prefix;
  }

  setParallelism(n: number): this {
    this.defaultParallelism = checkParallelism('env.setParallelism()', n);
    return this;
  }

  /** A bounded, non-parallel source of the given items, in order. */
  fromElements<T>(items: Iterable<T>): DataStream<T> {
    if (items === null || typeof items !== 'object' || typeof (items as Iterable<T>)[Symbol.iterator] !== 'function') {
      throw new InvalidArgumentError(
        `fromElements() expects an array or other iterable, got ${items === null ? 'null' : typeof items}`,
      );
    }
    const arr = [...items];
    const node = this.graph.addOperator(
      'source',
      { items: arr },
      { options: { connector: 'elements', nonParallel: true, count: arr.length } },
    );
    return new DataStream<T>(this.graph, node);
  }

  /** The numbers `from..to` inclusive, split into contiguous ranges across parallel subtasks. */
  fromSequence(from: number, to: number): DataStream<number> {
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || to < from) {
      throw new InvalidArgumentError(`fromSequence(from, to) needs whole numbers with from <= to, got ${from}, ${to}`);
    }
    const node = this.graph.addOperator('source', {}, { options: { connector: 'sequence', from, to } });
    return new DataStream<number>(this.graph, node);
  }

  /** Read from a connector: by name (`'datagen'`, `'file'`) or a connector object. */
  fromSource<T = unknown>(connector: string | Connector<T>, options: Record<string, unknown> = {}): DataStream<T> {
    const name = typeof connector === 'string' ? connector : connector?.name;
    if (typeof name !== 'string' || name.length === 0) {
      throw new InvalidArgumentError(`fromSource() expects a connector name or object, got ${String(connector)}`);
    }
    const inJob = typeof connector === 'object';
    // A built-in named by string is checked as the same object would be; its spec keeps the options as written.
    const c = inJob ? connector : namedConnector(name);
    if (c && !c.source) throw new InvalidArgumentError(`connector '${name}' has no source side`);
    const node = this.graph.addOperator('source', inJob ? { connector: connector as Connector } : {}, { options: {} });
    const opts = c?.source ? checkConnectorOptions(c.source, options, node.name) : options;
    // connectorInJob: the connector travels in the job module (the submit gate does not look it up by name).
    // connectorRescalable: likewise, that it can redistribute its positions (a restore at another parallelism).
    node.options = {
      connector: name,
      ...(inJob ? opts : options),
      ...(inJob ? { connectorInJob: true } : {}),
      ...(c?.parallelSource === false ? { nonParallel: true } : {}),
      ...(inJob && connector.source!.rescale ? { connectorRescalable: true } : {}),
    };
    return new DataStream<T>(this.graph, node);
  }
}
