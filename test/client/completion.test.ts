// `vera completion bash|zsh` prints a script bash really loads and completes
// with: commands, sub-commands and flags.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { completionScript } from '../../src/cli/completion.js';
import { main } from '../../src/cli/main.js';
import { captureIO } from './cli-io.js';

/** What bash completes for the words of a command line (the last one being typed). */
function complete(script: string, words: readonly string[]): string[] {
  const line = `source /dev/stdin <<'VERA_EOF'\n${script}\nVERA_EOF\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _vera; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', line], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.split('\n').filter((w) => w !== '');
}

describe('shell completion', () => {
  it('completes commands, sub-commands and flags in bash', () => {
    const script = completionScript('bash');
    expect(complete(script, ['vera', 'pu'])).toEqual(['push', 'put']);
    expect(complete(script, ['vera', 'jo'])).toEqual(['journal']);
    expect(complete(script, ['vera', 'journal', 'cl'])).toEqual(['claim']);
    expect(complete(script, ['vera', 'push', '--pers'])).toEqual(['--persistent']);
    expect(complete(script, ['vera', 'start', '--client-c'])).toEqual(['--client-cert', '--client-ca', '--client-cert-required']);
    expect(complete(script, ['vera', 'user', ''])).toEqual(expect.arrayContaining(['add', 'passwd', 'grant', '--token']));
  });

  it('is printed by vera completion, for bash and zsh, and refuses another shell', async () => {
    const bash = captureIO();
    expect(await main(['completion', 'bash'], bash)).toBe(0);
    expect(bash.out()).toContain('complete -o default -F _vera vera');
    const zsh = captureIO();
    expect(await main(['completion', 'zsh'], zsh)).toBe(0);
    expect(zsh.out()).toContain('bashcompinit');
    const fish = captureIO();
    expect(await main(['completion', 'fish'], fish)).toBe(2);
    expect(fish.err()).toMatch(/bash or zsh/);
  });
});
