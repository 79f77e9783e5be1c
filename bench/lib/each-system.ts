// Runs one measurement on each system in turn (J1, A1): a system that is not
// installed is reported, not measured; one that fails is reported with its
// error; every system started is stopped before the next starts.

export interface Contender<S> {
  readonly name: string;
  open(): Promise<S>;
  /** Why it cannot be measured here (a package that would not install), if so. */
  readonly unavailable?: string;
}

export async function measureEach<S extends { stop(): Promise<void> }, R extends { readonly errors: readonly string[] }>(
  tag: string,
  contenders: ReadonlyArray<Contender<S>>,
  measure: (system: S) => Promise<R>,
  unmeasured: (name: string, error: string) => R,
  log: (m: string) => void,
): Promise<{ results: R[]; failures: number }> {
  const results: R[] = [];
  let failures = 0;
  for (const c of contenders) {
    if (c.unavailable !== undefined) {
      log(`${tag} ${c.name}: not measured: ${c.unavailable}`);
      results.push(unmeasured(c.name, `not available: ${c.unavailable}`));
      continue;
    }
    let system: S | null = null;
    try {
      system = await c.open();
      const r = await measure(system);
      results.push(r);
      failures += r.errors.length;
    } catch (err) {
      failures++;
      log(`${tag} ${c.name}: failed: ${(err as Error).message}`);
      results.push(unmeasured(c.name, (err as Error).message));
    } finally {
      await system?.stop().catch(() => undefined);
    }
  }
  return { results, failures };
}
