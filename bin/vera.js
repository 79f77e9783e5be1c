#!/usr/bin/env node
// Entry point of the `vera` command: runs the compiled CLI (built by `npm run build`, which `npm ci` runs via `prepare`).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(`vera: ${err?.message ?? err}`); process.exit(1); },
);
