// `vera start`: the one place the CLI touches the server module, so everything
// else in the CLI compiles and runs without it.
import { startServer } from '../server/index.js';
import type { ServerConfig } from './config.js';
import { EXIT } from './errors.js';
import { stopped, type CliIO } from './io.js';

/** Runs a member until the stop signal (SIGINT/SIGTERM), then shuts it down cleanly. */
export async function runServer(config: ServerConfig, io: CliIO): Promise<number> {
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config);
  } catch (error) {
    io.stderr(`vera: cannot start: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.serverError;
  }
  await stopped(io.stop);
  await server.close();
  return EXIT.ok;
}
