// Argument checks of the families' queries: a bad path or session id is the
// caller's mistake, refused as BAD_REQUEST before anything is read.
import { validatePath, validateSessionId } from '../protocol/index.js';
import { StateMachineError } from '../statemachine/types.js';

export function checkPath(path: string, allowRoot: boolean): void {
  const problem = validatePath(path, { allowRoot });
  if (problem !== null) throw new StateMachineError('BAD_REQUEST', problem);
}

export function checkSession(session: string): void {
  const problem = validateSessionId(session);
  if (problem !== null) throw new StateMachineError('BAD_REQUEST', problem);
}
