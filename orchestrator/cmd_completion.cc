// `ferry completion bash|zsh`: a shell completion script written from the command
// line's own declaration (cli.cc), so it never lists a command or flag ferry lacks.
#include <iostream>
#include <sstream>

#include "orchestrator/cli.h"

namespace ferry::cli {
namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// One bash function: the command (and subcommand) typed so far picks the words;
// a flag completes from the command's flags, a workflow argument from files
// (-o default), a run argument offers `last` (or any run id typed in full).
std::string bash_script(const std::vector<CompletionCommand>& commands) {
  std::vector<std::string> top;
  for (const auto& c : commands) {
    if (c.path.find(' ') == std::string::npos) top.push_back(c.path);
  }
  std::ostringstream s;
  s << "# bash completion for ferry: source <(ferry completion bash), or install as\n"
       "# /usr/share/bash-completion/completions/ferry (the Debian package does).\n"
       "_ferry() {\n"
       "  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i w\n"
       "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
       "    w=${COMP_WORDS[i]}\n"
       "    case $w in -*) ;; *) if [[ -z $cmd ]]; then cmd=$w; elif [[ $cmd == hosts ]]; then cmd=\"hosts $w\"; fi ;; "
       "esac\n"
       "  done\n"
       "  local words= arg=\n"
       "  case $cmd in\n"
       "    '') words='" << joined(top) << " --help --version' ;;\n";
  for (const auto& c : commands) {
    std::vector<std::string> words = c.flags;
    words.insert(words.begin(), c.words.begin(), c.words.end());
    s << "    '" << c.path << "') words='" << joined(words) << "' arg=" << c.argument << " ;;\n";
  }
  s << "  esac\n"
       "  if [[ $cur == -* || -z $cmd || $arg == none ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
       "  elif [[ $arg == run ]]; then\n"
       "    COMPREPLY=($(compgen -W 'last' -- \"$cur\"))\n"
       "  fi\n"
       "}\n"
       "complete -o default -F _ferry ferry\n";
  return s.str();
}

}  // namespace

int cmd_completion(const std::string& shell, const std::vector<CompletionCommand>& commands) {
  if (shell == "bash") {
    std::cout << bash_script(commands);
  } else {  // zsh runs the same function through its bash emulation
    std::cout << "# zsh completion for ferry: source <(ferry completion zsh) in ~/.zshrc\n"
                 "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n"
              << bash_script(commands);
  }
  return kExitOk;
}

}  // namespace ferry::cli
