// A minimal typed event emitter: listener maps are checked at compile time.
// A listener that throws does not stop the others; its error is rethrown on a
// later tick, as an uncaught exception, so bugs stay visible.

type Listener = (...args: never[]) => void;

export class TypedEmitter<Events extends { [K in keyof Events]: Listener }> {
  private readonly listeners = new Map<keyof Events, Set<Listener>>();

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(name: K, listener: Events[K]): () => void {
    let set = this.listeners.get(name);
    if (set === undefined) this.listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => this.off(name, listener);
  }

  off<K extends keyof Events>(name: K, listener: Events[K]): void {
    this.listeners.get(name)?.delete(listener);
  }

  protected emit<K extends keyof Events>(name: K, ...args: Parameters<Events[K]>): void {
    const set = this.listeners.get(name);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        (listener as (...a: Parameters<Events[K]>) => void)(...args);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  protected listenerCount(name: keyof Events): number {
    return this.listeners.get(name)?.size ?? 0;
  }
}
