// The scale tests' progress lines: how long a step took and the heap after it.

/** Prints `what` with the seconds since `since` and the heap in use; returns now, the next step's start. */
export function lap(what: string, since: number): number {
  const now = performance.now();
  console.info(`${what}: ${((now - since) / 1000).toFixed(1)} s, heap ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB`);
  return now;
}
