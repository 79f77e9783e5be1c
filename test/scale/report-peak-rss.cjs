// Preloaded (node -r) into a child process whose peak memory a test measures:
// prints the process's maximum resident set size, in KiB, as its last stderr line.
process.on('exit', () => {
  process.stderr.write(`\nPEAK_RSS_KIB=${process.resourceUsage().maxRSS}\n`);
});
