import { command } from '../command.js';
import { COMPLETION_SHELLS, completionScript, type CompletionShell } from '../completion-scripts.js';

export const completion = command({
  command: 'completion [shell]',
  describe: 'Print a shell completion script (bash, zsh or fish; default: the one $SHELL names, else bash)',
  builder: (yargs) =>
    yargs
      .positional('shell', { type: 'string', choices: COMPLETION_SHELLS, describe: 'the shell to complete in' })
      .example([
        ['$0 completion bash >> ~/.bashrc', ''],
        ['$0 completion zsh >> ~/.zshrc', ''],
        ['$0 completion fish > ~/.config/fish/completions/agentctl.fish', ''],
      ]),
  run: async (args, { settings, terminal }) => {
    // As yargs did before a shell could be named: $SHELL's if it is one of the three, else bash.
    const fromEnvironment = COMPLETION_SHELLS.find((shell) => shell === settings.shell) ?? 'bash';
    terminal.out(completionScript[(args.shell as CompletionShell | undefined) ?? fromEnvironment]);
  },
});
