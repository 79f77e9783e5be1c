// `vera completion bash|zsh`: a script that completes vera's commands, the
// sub-commands of the grouped ones, and each command's flags. Generated from the
// same tables the parser uses, so a new flag completes without editing this.
import type { FlagSpecs } from './args.js';
import { CLIENT_COMMANDS, CLIENT_FLAGS } from './client-commands.js';
import { START_FLAGS } from './config.js';
import { UsageError } from './errors.js';
import { FAMILY_VERBS } from './family-verbs.js';

/** Sub-commands of the verbs that group several (their own parsers know the flags). */
const SUBCOMMANDS: Readonly<Record<string, readonly string[]>> = {
  journal: ['create', 'configure', 'ls', 'show', 'add', 'claim', 'flags', 'release', 'flagged', 'limits', 'drop'],
  assign: ['service', 'services', 'node', 'user', 'lookup', 'retire', 'decommission', 'purge', 'events', 'count'],
  hibernate: ['ls'],
  lease: ['grant', 'keep-alive', 'revoke', 'show'],
  auth: ['enable', 'disable', 'status'],
  user: ['add', 'passwd', 'grant', 'revoke', 'rm', 'ls'],
  role: ['add', 'grant', 'revoke', 'rm', 'ls'],
  member: ['list', 'add', 'promote', 'remove'],
  leader: ['transfer'],
  snapshot: ['save', 'restore'],
  completion: ['bash', 'zsh'],
};

function flagWords(specs: FlagSpecs): string {
  return Object.keys(specs)
    .map((f) => `--${f}`)
    .join(' ');
}

export function completionScript(shell: string): string {
  if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`'vera completion' takes bash or zsh, got ${JSON.stringify(shell)}`);
  const verbs = ['start', 'dev', 'status', 'member', 'leader', 'snapshot', 'completion', ...Object.keys(CLIENT_COMMANDS), ...Object.keys(FAMILY_VERBS)];
  const flagsOf: Record<string, string> = { start: flagWords(START_FLAGS) };
  for (const [verb, command] of Object.entries(CLIENT_COMMANDS)) flagsOf[verb] = flagWords(command.flags);
  const clientFlags = flagWords(CLIENT_FLAGS);
  const cases = [
    ...Object.entries(SUBCOMMANDS).map(([verb, subs]) => `    ${verb}) words="${subs.join(' ')} ${clientFlags}" ;;`),
    ...Object.entries(flagsOf).map(([verb, flags]) => `    ${verb}) words="${flags}" ;;`),
  ];
  const body = `_vera() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${verbs.join(' ')} --help" -- "$cur") )
    return
  fi
  local words
  case "\${COMP_WORDS[1]}" in
${cases.join('\n')}
    *) words="${clientFlags}" ;;
  esac
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -o default -F _vera vera
`;
  const header = shell === 'bash' ? '# vera completion for bash: source <(vera completion bash)\n' : '# vera completion for zsh: source <(vera completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n';
  return header + body;
}
