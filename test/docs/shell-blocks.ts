// The shell examples of a Markdown page: its fenced blocks tagged sh, bash, shell or
// console, each with the not-run marker written right before it, if any:
//
//   <!-- not-run: starts a server that runs until Ctrl-C -->
//   ```sh
//   vera start
//   ```
//
// A marker must give its reason and stand right before a shell block (blank lines
// between are allowed); anything else is a mistake in the page, reported by line, as
// are commands outside a tagged block (an untagged fence, an indented block).

export const SHELL_TAGS = ['sh', 'bash', 'shell', 'console'] as const;

export interface ShellBlock {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly tag: (typeof SHELL_TAGS)[number];
  readonly code: string;
  /** The marker's reason when the block is marked not-run. */
  readonly notRun: string | null;
}

export interface PageScan {
  readonly blocks: ShellBlock[];
  /** Markers without a reason, markers before no shell block, untagged blocks of commands: "file:line: what". */
  readonly mistakes: string[];
}

const MARKER = /^<!--\s*not-run\b(?::?\s*(.*?))?\s*-->$/;
/** An untagged block whose first command line starts so is a shell example that lost its tag. */
const LOOKS_LIKE_SHELL = /^(\$ |vera |npx |npm |curl |export )/;

export function scanPage(file: string, markdown: string): PageScan {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  const mistakes: string[] = [];
  let pending: { readonly line: number; readonly reason: string } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const marker = MARKER.exec(text.trim());
    if (marker !== null) {
      if (pending !== null) mistakes.push(`${file}:${pending.line}: a not-run marker before no shell block`);
      const reason = (marker[1] ?? '').trim();
      if (reason === '') mistakes.push(`${file}:${i + 1}: a not-run marker without a reason (write <!-- not-run: why -->)`);
      pending = { line: i + 1, reason };
      continue;
    }
    const fence = /^( *)(`{3,}|~{3,})\s*(\S*)/.exec(text);
    if (fence === null && (lines[i - 1] ?? '').trim() === '' && /^ {4,}/.test(text) && LOOKS_LIKE_SHELL.test(text.trimStart())) {
      mistakes.push(`${file}:${i + 1}: an indented block of commands: fence it as \`\`\`sh so the doc test runs it (or marks it not-run)`);
    }
    if (fence === null) {
      if (text.trim() !== '' && pending !== null) {
        mistakes.push(`${file}:${pending.line}: a not-run marker before no shell block`);
        pending = null;
      }
      continue;
    }
    const [, indent, mark, tag] = fence;
    const body: string[] = [];
    let end = i + 1;
    while (end < lines.length && !(lines[end]!.trim().startsWith(mark!) && lines[end]!.trim().replaceAll(mark![0]!, '') === '')) {
      body.push(lines[end]!.slice(Math.min(indent!.length, lines[end]!.length - lines[end]!.trimStart().length)));
      end++;
    }
    if (end === lines.length) mistakes.push(`${file}:${i + 1}: a code block is never closed`);
    const isShell = (SHELL_TAGS as readonly string[]).includes(tag!);
    if (isShell) {
      blocks.push({ file, line: i + 1, tag: tag as ShellBlock['tag'], code: body.join('\n'), notRun: pending?.reason ?? null });
    } else {
      if (pending !== null) mistakes.push(`${file}:${pending.line}: a not-run marker before no shell block`);
      const first = body.find((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
      if (tag === '' && first !== undefined && LOOKS_LIKE_SHELL.test(first.trimStart())) {
        mistakes.push(`${file}:${i + 1}: a block of commands without a tag: write \`\`\`sh (or \`\`\`console for commands with their output)`);
      }
    }
    pending = null;
    i = end;
  }
  if (pending !== null) mistakes.push(`${file}:${pending.line}: a not-run marker before no shell block`);
  return { blocks, mistakes };
}

export interface ConsoleStep {
  readonly command: string;
  /** The output the page shows for it, line by line. */
  readonly shown: string[];
}

/** A ```console block: `$ command` lines (a trailing backslash continues one), each followed by the output shown. */
export function consoleSteps(code: string): ConsoleStep[] {
  const steps: { command: string; shown: string[] }[] = [];
  let continuing = false;
  for (const line of code.split('\n')) {
    if (continuing) {
      steps.at(-1)!.command += `\n${line}`;
      continuing = line.endsWith('\\');
    } else if (line.startsWith('$ ')) {
      steps.push({ command: line.slice(2), shown: [] });
      continuing = line.endsWith('\\');
    } else if (steps.length > 0 && line.trim() !== '') {
      steps.at(-1)!.shown.push(line.trim());
    }
  }
  return steps;
}
