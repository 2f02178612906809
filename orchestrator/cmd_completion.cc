// `ferry completion bash|zsh`: a shell completion script written from the command
// line's own declaration (cli.cc), so it never lists a command or flag ferry lacks;
// and `ferry __complete`, which the script asks for run ids and stage names.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "base/file_util.h"
#include "orchestrator/cli.h"

namespace ferry::cli {
namespace {

constexpr int kCompletedRuns = 200;  // run ids offered, newest first: more only clutters

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Each word of `words` quoted for a bash case pattern: 'run -p'|'run --param'.
std::string case_patterns(const std::string& command, const std::vector<std::string>& flags) {
  std::string out;
  for (const auto& f : flags) out += (out.empty() ? "'" : "|'") + command + " " + f + "'";
  return out;
}

// _ferry_valued CMD FLAG: whether FLAG takes the next word as its value in CMD.
void write_valued_function(std::ostream& s, const std::vector<CompletionCommand>& commands) {
  s << "_ferry_valued() {  # CMD FLAG: whether FLAG takes the next word as its value in CMD\n"
       "  case \"$1 $2\" in\n";
  for (const auto& c : commands) {
    if (!c.valued.empty()) s << "    " << case_patterns(c.path, c.valued) << ") return 0 ;;\n";
  }
  s << "  esac\n"
       "  return 1\n"
       "}\n";
}

constexpr char kAskFunction[] =
    "_ferry_ask() {  # DB WHAT [RUN]: run ids or a run's stages, from the store (read-only)\n"
    "  local db=$1; shift\n"
    "  if [[ -n $db ]]; then set -- \"$@\" --db \"$db\"; fi\n"
    "  \"${COMP_WORDS[0]}\" __complete \"$@\" 2>/dev/null\n"
    "}\n";

// _ferry's first part: reads the words typed so far into the command (and, after a
// command with subcommands, its subcommand), --db, a flag awaiting its value, and
// the positionals.
void write_word_loop(std::ostream& s, const std::vector<std::string>& parents) {
  s << "  local cur=${COMP_WORDS[COMP_CWORD]} cmd= i w flag= db=\n"
       "  local -a pos=()\n"
       "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
       "    w=${COMP_WORDS[i]}\n"
       "    if [[ -n $flag ]]; then\n"
       "      if [[ $flag == --db ]]; then db=$w; fi\n"
       "      flag=\n"
       "      continue\n"
       "    fi\n"
       "    case $w in\n"
       "      --db=*) db=${w#--db=} ;;\n"
       "      -*=*) ;;\n"
       "      -*) if _ferry_valued \"$cmd\" \"$w\"; then flag=$w; fi ;;\n"
       "      *)\n"
       "        if [[ -z $cmd ]]; then\n"
       "          cmd=$w\n";
  for (const auto& p : parents) {
    s << "        elif [[ $cmd == '" << p << "' && ${#pos[@]} == 0 ]]; then\n";
    s << "          cmd=\"$cmd $w\"\n";
  }
  s << "        else\n"
       "          pos+=(\"$w\")\n"
       "        fi ;;\n"
       "    esac\n"
       "  done\n";
}

// The word after a flag that takes a value: that flag's choices, where it has some.
void write_flag_values(std::ostream& s, const std::vector<CompletionCommand>& commands) {
  s << "  if [[ -n $flag ]]; then  # the word is that flag's value\n"
       "    case \"$cmd $flag\" in\n";
  for (const auto& c : commands) {
    for (const auto& [flag, values] : c.choices) {
      s << "      '" << c.path << " " << flag << "') COMPREPLY=($(compgen -W '" << values << "' -- \"$cur\")) ;;\n";
    }
  }
  s << "    esac\n"
       "    return\n"
       "  fi\n";
}

// Each command's words (subcommands and flags) and what its positionals take.
void write_command_words(std::ostream& s, const std::vector<CompletionCommand>& commands,
                         const std::vector<std::string>& top) {
  s << "  local words= args=\n"
       "  case $cmd in\n";
  s << "    '') words='" << joined(top) << " --help --version' ;;\n";
  for (const auto& c : commands) {
    std::vector<std::string> words = c.flags;
    words.insert(words.begin(), c.words.begin(), c.words.end());
    s << "    '" << c.path << "') words='" << joined(words) << "' args='" << joined(c.arguments) << "' ;;\n";
  }
  s << "  esac\n";
}

// _ferry's last part: the word under the cursor completes from the command's words,
// `last` and the run ids, or the run's stages, as its positional's kind says.
constexpr char kCompleteByKind[] =
    "  local -a kinds=($args)\n"
    "  local kind=${kinds[${#pos[@]}]:-}\n"
    "  if [[ $cur == -* || -z $cmd || $kind == none ]]; then\n"
    "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "  elif [[ $kind == run ]]; then\n"
    "    COMPREPLY=($(compgen -W \"last $(_ferry_ask \"$db\" runs)\" -- \"$cur\"))\n"
    "  elif [[ $kind == stage ]]; then\n"
    "    COMPREPLY=($(compgen -W \"$(_ferry_ask \"$db\" stages \"${pos[0]}\")\" -- \"$cur\"))\n"
    "  fi\n";

// One bash function: the command (and subcommand) typed so far picks the words.
// Words are counted as a shell parser would: a flag that takes a value takes the
// next word too (_ferry_valued), the others are the positionals, in order. A flag
// completes from the command's flags, a flag's value from its choices, a workflow
// argument from files (-o default), a run argument from `last` and the store's run
// ids, a stage argument from that run's stages (both through `ferry __complete`,
// the same ferry, the same --db).
std::string bash_script(const std::vector<CompletionCommand>& commands) {
  std::vector<std::string> top, parents;
  for (const auto& c : commands) {
    size_t space = c.path.rfind(' ');
    if (space == std::string::npos) {
      top.push_back(c.path);
    } else if (std::find(parents.begin(), parents.end(), c.path.substr(0, space)) == parents.end()) {
      parents.push_back(c.path.substr(0, space));
    }
  }
  std::ostringstream s;
  s << "# bash completion for ferry: source <(ferry completion bash), or install as\n"
       "# /usr/share/bash-completion/completions/ferry (the Debian package does).\n";
  write_valued_function(s, commands);
  s << kAskFunction << "_ferry() {\n";
  write_word_loop(s, parents);
  write_flag_values(s, commands);
  write_command_words(s, commands, top);
  s << kCompleteByKind << "}\n"
    << "complete -o default -F _ferry ferry\n";
  return s.str();
}

}  // namespace

int cmd_completion(const std::string& shell, const std::vector<CompletionCommand>& commands) {
  if (shell == "bash") {
    std::cout << bash_script(commands);
  } else {  // zsh runs the same function through its bash emulation
    // compinit only where ~/.zshrc has not run it: running it again is slow and
    // resets what the user set up.
    std::cout << "# zsh completion for ferry: source <(ferry completion zsh) in ~/.zshrc\n"
                 "(( ${+functions[compdef]} )) || { autoload -U +X compinit && compinit; }\n"
                 "(( ${+functions[complete]} )) || { autoload -U +X bashcompinit && bashcompinit; }\n"
              << bash_script(commands);
  }
  return kExitOk;
}

int cmd_complete_words(const Common& c, const std::string& what, const std::string& run) {
  // A completion must never fail loudly or create a store: no database, no words.
  if (c.db.empty() || !path_exists(c.db)) return kExitOk;
  auto store = open_store_read_only(c);
  if (!store.ok()) return kExitNotFound;
  if (what == "runs") {
    auto runs = (*store)->list_runs(kCompletedRuns);
    if (!runs.ok()) return kExitInternal;
    for (const auto& r : *runs) std::cout << r.id << "\n";
    return kExitOk;
  }
  auto found = (*store)->find_run(run.empty() ? "last" : run);
  if (!found.ok()) return kExitNotFound;
  auto stages = (*store)->stages(found->id);
  if (!stages.ok()) return kExitInternal;
  for (const auto& st : *stages) std::cout << st.name << "\n";
  return kExitOk;
}

}  // namespace ferry::cli
