// Whether a member may listen where it was told to. A client port on loopback
// reaches only this machine, so it may run without authentication (the quick
// start); on any other address it needs authentication turned on (vera auth
// enable), or --insecure, which says the operator knows anyone who reaches it
// may do anything. Judged at start, once the store says whether authentication
// is on, and again before authentication is turned off.

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Why the member must not serve its client port as configured, or null. */
export function exposureProblem(config: { readonly client: { readonly host: string }; readonly insecure?: boolean }, authEnabled: boolean): string | null {
  if (config.insecure === true || authEnabled || isLoopbackHost(config.client.host)) return null;
  return `the client port would listen on ${config.client.host}, beyond this machine, with authentication off: anyone who reaches it could read, write and delete any data. Start it once on 127.0.0.1, add a root user and turn authentication on (vera user add root; vera user grant root root; vera auth enable; see docs/security.md), or pass --insecure to accept the exposure`;
}
