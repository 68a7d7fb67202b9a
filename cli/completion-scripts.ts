/**
 * Shell completion scripts for agentctl, after yargs' own (build/lib/completion-templates.js,
 * MIT). Each asks `agentctl --get-yargs-completions` with SHELL set to its shell, because
 * yargs formats the candidates by $SHELL (zsh `name:description`, fish `name<TAB>description`)
 * and a user's login shell need not be the one completing.
 */
export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

const bash = `###-begin-agentctl-completions-###
# agentctl completion for bash. Installation: agentctl completion bash >> ~/.bashrc
_agentctl_yargs_completions()
{
    local cur_word args type_list
    cur_word="\${COMP_WORDS[COMP_CWORD]}"
    args=("\${COMP_WORDS[@]}")
    mapfile -t type_list < <(SHELL=bash agentctl --get-yargs-completions "\${args[@]}")
    mapfile -t COMPREPLY < <(compgen -W "$( printf '%q ' "\${type_list[@]}" )" -- "\${cur_word}" |
        awk '/ / { print "\\""$0"\\"" } /^[^ ]+$/ { print $0 }')
    if [ \${#COMPREPLY[@]} -eq 0 ]; then
      COMPREPLY=()
    fi
    return 0
}
complete -o bashdefault -o default -F _agentctl_yargs_completions agentctl
###-end-agentctl-completions-###
`;

const zsh = `#compdef agentctl
###-begin-agentctl-completions-###
# agentctl completion for zsh. Installation: agentctl completion zsh >> ~/.zshrc
_agentctl_yargs_completions()
{
  local reply
  local si=$IFS
  IFS=$'\\n' reply=($(SHELL=zsh COMP_CWORD="$((CURRENT-1))" COMP_LINE="$BUFFER" COMP_POINT="$CURSOR" agentctl --get-yargs-completions "\${words[@]}"))
  IFS=$si
  if [[ \${#reply} -gt 0 ]]; then
    _describe 'values' reply
  else
    _default
  fi
}
if [[ "\${zsh_eval_context[-1]}" == "loadautofunc" ]]; then
  _agentctl_yargs_completions "$@"
else
  compdef _agentctl_yargs_completions agentctl
fi
###-end-agentctl-completions-###
`;

// The words before the cursor, then the one being typed (empty after a space).
const fish = `###-begin-agentctl-completions-###
# agentctl completion for fish. Installation: agentctl completion fish > ~/.config/fish/completions/agentctl.fish
complete -f -c agentctl -a '(env SHELL=fish agentctl --get-yargs-completions (commandline -opc)[2..-1] (commandline -ct))'
###-end-agentctl-completions-###
`;

export const completionScript: Record<CompletionShell, string> = { bash, zsh, fish };
