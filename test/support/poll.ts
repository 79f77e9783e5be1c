// Bounded waiting for the multi-process tests: poll a condition, or give a promise
// a deadline. Every wait names what it waited for, so a timeout says what broke.

/**
 * Calls `probe` every `everyMs` until it returns something other than undefined
 * (a probe that throws counts as "not yet"); throws naming `what`, and the
 * probe's last error, after `timeoutMs`.
 */
export async function pollUntil<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
      last = null;
    } catch (error) {
      last = error;
    }
    if (performance.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === null ? '' : ` (last error: ${last instanceof Error ? last.message : String(last)})`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** `promise`, or a rejection naming `what` if it has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
