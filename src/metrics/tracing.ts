/**
 * Spans of the engine's coarse transitions (clink.submit, clink.checkpoint, clink.restart,
 * clink.takeover), never per record. The engine starts and ends them through this interface; with no
 * --otlp-endpoint it is NO_TRACING and costs nothing.
 */
export type SpanAttributes = Record<string, string | number | boolean>;

export interface Span {
  /** End the span, adding `attributes`; with `error` it ends as failed, saying why. */
  end(attributes?: SpanAttributes, error?: string): void;
}

export interface Tracer {
  start(name: string, attributes: SpanAttributes): Span;
}

const NO_SPAN: Span = { end: () => undefined };
export const NO_TRACING: Tracer = { start: () => NO_SPAN };
