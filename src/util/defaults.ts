/** Settings filled in from their defaults: a key given as undefined keeps its default, as if absent. */
export function withDefaults<D extends object, G extends object>(defaults: Readonly<D>, given: G): D & G {
  const out: Record<string, unknown> = { ...defaults };
  for (const [k, v] of Object.entries(given)) if (v !== undefined) out[k] = v;
  return out as D & G;
}
