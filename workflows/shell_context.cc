#include "workflows/shell_context.h"

#include <cctype>
#include <set>

namespace ferry::workflow {
namespace {

// One level of nesting in the script. Command levels (kCommand, kSubst) hold
// commands: words, operators, comments, here-documents. The rest hold text whose
// end the shell finds by its own rule.
enum class Kind {
  kCommand,    // the script, or a ( … ) / { … } group in it
  kSubst,      // $( … ): commands again, ended by its ')'
  kSingle,     // '…'
  kAnsi,       // $'…' (bash): backslash escapes, so a value's \' does not end it
  kDouble,     // "…"
  kBackquote,  // `…`: ends at the next unescaped backquote, whatever stands between
  kArith,      // $(( … )), (( … )), for (( … )), $[ … ]
  kCond,       // [[ … ]]
  kLet,        // the arguments of let, declare -i, typeset -i, local -i, export -i
  kNames,      // arguments bash reads as variable names, whose a[…] it evaluates
  kBrace,      // ${ … }: offsets, subscripts and operators
  kSubscript,  // NAME[ … ] of an assignment
};

struct Frame {
  Kind kind;
  int depth = 0;            // open ( or [ inside it
  bool cmd_start = true;    // command levels: the next word is a command name
  bool bracket = false;     // kArith opened by $[
  int cases = 0;            // command levels: open `case`, whose patterns end in ')'
  bool names_only = false;  // kNames of declare & co: only the part before '=' is a name
  bool after_eq = false;    // kNames: this word's '=' is behind
  bool redirect = false;    // kNames: this word follows < or >, a file, not a name
};

struct Heredoc {
  std::string delim;
  bool strip_tabs = false;
  bool expands = true;
};

// Reads the delimiter word after `<<` / `<<-` starting at i; quotes anywhere in it
// mean the body does not expand.
Heredoc read_heredoc_word(const std::string& s, size_t& i) {
  Heredoc h;
  if (i < s.size() && s[i] == '-') {
    h.strip_tabs = true;
    ++i;
  }
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != ';' && s[i] != '|' && s[i] != '&' &&
         s[i] != '<' && s[i] != '>' && s[i] != ')') {
    char c = s[i];
    if (c == '\'' || c == '"') {
      h.expands = false;
      ++i;
      while (i < s.size() && s[i] != c) h.delim += s[i++];
      if (i < s.size()) ++i;
    } else if (c == '\\' && i + 1 < s.size()) {
      h.expands = false;
      h.delim += s[i + 1];
      i += 2;
    } else {
      h.delim += c;
      ++i;
    }
  }
  return h;
}

bool blank(char c) { return c == ' ' || c == '\t'; }

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether s[i] begins a word: after a blank or an operator.
bool starts_word(const std::string& s, size_t i) {
  if (i == 0) return true;
  char p = s[i - 1];
  return std::isspace(static_cast<unsigned char>(p)) || p == ';' || p == '&' || p == '|' || p == '(' || p == ')';
}

bool ends_word(const std::string& s, size_t i) {
  return i >= s.size() || std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ';' || s[i] == '&' || s[i] == '|' ||
         s[i] == '(' || s[i] == ')' || s[i] == '<' || s[i] == '>';
}

// Words after which the next word is again a command name.
bool is_reserved(const std::string& w) {
  for (const char* r : {"if", "then", "else", "elif", "fi", "do",   "done", "while",    "until",  "for",
                        "{",  "}",    "!",    "time", "in", "case", "esac", "function", "select", "coproc"}) {
    if (w == r) return true;
  }
  return false;
}

// Whether the rest of the command from i carries an option word holding one of
// `letters` (declare's -i, -ri, -n …; printf's and test's -v).
bool has_option(const std::string& s, size_t i, const char* letters) {
  while (i < s.size() && s[i] != '\n' && s[i] != ';' && s[i] != '&' && s[i] != '|' && s[i] != ')') {
    while (i < s.size() && blank(s[i])) ++i;
    size_t b = i;
    while (i < s.size() && !ends_word(s, i)) ++i;
    if (i > b + 1 && (s[b] == '-' || s[b] == '+') && s.find_first_of(letters, b) < i) return true;
    if (i == b) ++i;
  }
  return false;
}

// ${{ int(…) }} renders only -?[0-9]+ (template.h), a word safe in any context.
bool is_integer_template(const std::string& s, size_t k) {
  size_t b = s.find_first_not_of(" \t", k + 3);
  return b != std::string::npos && s.compare(b, 4, "int(") == 0;
}

// What a template means where the innermost levels of `stack` put it; empty when
// a single-quoted word is safe there.
std::string place(const std::vector<Frame>& stack) {
  for (auto f = stack.rbegin(); f != stack.rend(); ++f) {
    switch (f->kind) {
      case Kind::kArith: return "arithmetic";
      case Kind::kCond: return "[[ ]]";
      case Kind::kLet: return "the arguments of let or declare -i";
      case Kind::kNames:
        if (!(f->names_only && f->after_eq) && !f->redirect)
          return "a variable name (unset, read, printf -v, test -v, declare)";
        break;
      case Kind::kBrace: return "a ${…} expansion";
      case Kind::kSubscript: return "an array subscript";
      case Kind::kBackquote: return "backquotes";
      default: break;
    }
  }
  switch (stack.back().kind) {
    case Kind::kSingle: return "single quotes";
    case Kind::kAnsi: return "$'…' quotes";
    case Kind::kDouble: return "double quotes";
    default: return "";
  }
}

bool is_command_level(Kind k) { return k == Kind::kCommand || k == Kind::kSubst; }

}  // namespace

std::vector<UnsafeTemplate> unsafe_templates(const std::string& s) {
  std::vector<UnsafeTemplate> out;
  std::vector<Frame> stack = {{Kind::kCommand}};
  std::vector<Heredoc> pending;
  // Names declared -i (or -n) so far: assigning to one evaluates the value.
  std::set<std::string> integer_names;
  auto at_template = [&](size_t k) { return s.compare(k, 3, "${{") == 0; };
  auto skip_template = [&](size_t k) {
    size_t end = s.find("}}", k + 3);
    return end == std::string::npos ? s.size() : end + 2;
  };
  auto report = [&](size_t k, const std::string& where) {
    if (!where.empty() && !is_integer_template(s, k)) out.push_back({k, where});
  };
  // Here-document bodies start on the line after their `<<`, one after another.
  auto read_bodies = [&](size_t& i) {
    for (const Heredoc& h : pending) {
      while (i < s.size()) {
        size_t eol = s.find('\n', i);
        if (eol == std::string::npos) eol = s.size();
        size_t start = i;
        if (h.strip_tabs) {
          while (start < eol && s[start] == '\t') ++start;
        }
        if (s.compare(start, eol - start, h.delim) == 0) {
          i = eol < s.size() ? eol + 1 : eol;
          break;
        }
        for (size_t k = i; k < eol; ++k) {
          if (at_template(k)) {
            if (h.expands) report(k, "a here-document");
            k = skip_template(k) - 1;
          }
        }
        i = eol < s.size() ? eol + 1 : eol;
      }
    }
    pending.clear();
  };

  size_t i = 0;
  while (i < s.size()) {
    Frame& f = stack.back();
    const char c = s[i];
    if (at_template(i)) {
      report(i, place(stack));
      i = skip_template(i);
      if (is_command_level(f.kind)) f.cmd_start = false;
      continue;
    }
    // Text whose end is one character.
    if (f.kind == Kind::kSingle) {
      if (c == '\'') stack.pop_back();
      ++i;
      continue;
    }
    if (f.kind == Kind::kAnsi || f.kind == Kind::kBackquote) {
      if (c == '\\') {
        if (at_template(i + 1)) report(i + 1, place(stack));
        i += 2;
      } else {
        if (c == (f.kind == Kind::kAnsi ? '\'' : '`')) stack.pop_back();
        ++i;
      }
      continue;
    }
    // A backslash before ${{ quotes the rendered word's opening quote, and $ before
    // it makes $'…' of it (bash), whose backslashes a value can use.
    if (c == '\\') {
      if (at_template(i + 1)) report(i + 1, "after a backslash");
      i += 2;
      continue;
    }
    if (c == '$' && at_template(i + 1)) {
      report(i + 1, "after a $");
      ++i;
      continue;
    }
    // Openings that nest anywhere but in quotes.
    if (c == '`') {
      stack.push_back({Kind::kBackquote});
      ++i;
      continue;
    }
    if (c == '$' && s.compare(i, 3, "$((") == 0) {
      stack.push_back({Kind::kArith});
      i += 3;
      continue;
    }
    if (c == '$' && s.compare(i, 2, "$(") == 0) {
      stack.push_back({Kind::kSubst});
      i += 2;
      continue;
    }
    if (c == '$' && s.compare(i, 2, "${") == 0) {
      stack.push_back({Kind::kBrace});
      i += 2;
      continue;
    }
    if (c == '$' && s.compare(i, 2, "$[") == 0) {
      Frame a{Kind::kArith};
      a.bracket = true;
      stack.push_back(a);
      i += 2;
      continue;
    }
    if (f.kind == Kind::kDouble) {
      if (c == '"') stack.pop_back();
      ++i;
      continue;
    }
    if (c == '$' && s.compare(i, 2, "$'") == 0) {
      stack.push_back({Kind::kAnsi});
      i += 2;
      continue;
    }
    if (c == '\'') {
      stack.push_back({Kind::kSingle});
      ++i;
      continue;
    }
    if (c == '"') {
      stack.push_back({Kind::kDouble});
      ++i;
      continue;
    }
    switch (f.kind) {
      case Kind::kArith:
        if (f.bracket) {
          if (c == '[') ++f.depth;
          if (c == ']' && f.depth-- == 0) stack.pop_back();
        } else if (c == '(') {
          ++f.depth;
        } else if (c == ')') {
          if (f.depth == 0 && i + 1 < s.size() && s[i + 1] == ')') {
            stack.pop_back();
            ++i;
          } else if (f.depth > 0) {
            --f.depth;
          }
        }
        ++i;
        continue;
      case Kind::kBrace:
        if (c == '{') ++f.depth;
        if (c == '}' && f.depth-- == 0) stack.pop_back();
        ++i;
        continue;
      case Kind::kSubscript:
        if (c == '[') ++f.depth;
        if (c == ']' && f.depth-- == 0) stack.pop_back();
        ++i;
        continue;
      case Kind::kCond:
        if (c == ']' && s.compare(i, 2, "]]") == 0 && starts_word(s, i) && ends_word(s, i + 2)) {
          stack.pop_back();
          i += 2;
          continue;
        }
        ++i;
        continue;
      case Kind::kLet:
      case Kind::kNames:
        // Its command ends here; the level below sees the same character.
        if (c == '\n' || c == ';' || c == '&' || c == '|' || c == ')') {
          stack.pop_back();
          continue;
        }
        if (blank(c)) {
          f.after_eq = false;
          if (i > 0 && s[i - 1] != '<' && s[i - 1] != '>' && !blank(s[i - 1])) f.redirect = false;
        }
        if (c == '=') f.after_eq = true;
        if (c == '<' || c == '>') f.redirect = true;
        if (f.kind == Kind::kLet && starts_word(s, i) && (std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
          size_t e = i;
          while (e < s.size() && is_name_char(s[e])) ++e;
          integer_names.insert(s.substr(i, e - i));
          i = e;
          continue;
        }
        ++i;
        continue;
      default: break;
    }
    // Command levels: words, operators, comments, here-documents.
    if (c == '#' && starts_word(s, i)) {
      // A value's newline would end the comment and run its next line.
      for (; i < s.size() && s[i] != '\n'; ++i) {
        if (at_template(i)) {
          report(i, "a comment");
          i = skip_template(i) - 1;
        }
      }
      continue;
    }
    if (c == '<' && s.compare(i, 2, "<<") == 0 && s.compare(i, 3, "<<<") != 0) {
      i += 2;
      pending.push_back(read_heredoc_word(s, i));
      f.cmd_start = false;
      continue;
    }
    if (c == '\n') {
      f.cmd_start = true;
      ++i;
      if (!pending.empty()) read_bodies(i);
      continue;
    }
    if (c == ';' || c == '&' || c == '|') {
      f.cmd_start = true;
      ++i;
      continue;
    }
    if (c == ')') {
      if (f.kind == Kind::kSubst && f.depth == 0 && f.cases == 0) {
        stack.pop_back();
      } else {
        if (f.depth > 0) --f.depth;
        f.cmd_start = true;
      }
      ++i;
      continue;
    }
    if (c == '(' && f.cmd_start && s.compare(i, 2, "((") == 0) {
      stack.push_back({Kind::kArith});
      i += 2;
      continue;
    }
    if (c == '(') {
      ++f.depth;
      f.cmd_start = true;
      ++i;
      continue;
    }
    if (blank(c) || !starts_word(s, i)) {
      ++i;
      continue;
    }
    // A word begins.
    if (s.compare(i, 2, "[[") == 0 && f.cmd_start && ends_word(s, i + 2)) {
      stack.push_back({Kind::kCond});
      i += 2;
      continue;
    }
    size_t e = i;
    if (s.compare(i, 2, "[ ") == 0) ++e;  // the test command `[`
    while (e < s.size() && !ends_word(s, e) && s[e] != '=' && s[e] != '[' && s[e] != '+' && s[e] != '$' &&
           s[e] != '"' && s[e] != '\'' && s[e] != '`' && s[e] != '\\')
      ++e;
    std::string word = s.substr(i, e - i);
    bool name = !word.empty() && !std::isdigit(static_cast<unsigned char>(word[0]));
    for (char w : word) name = name && is_name_char(w);
    if (f.cmd_start && name && e < s.size() && s[e] == '[') {
      // a[…]=v: bash evaluates the subscript, and a value's own a[$(…)] in it runs.
      stack.push_back({Kind::kSubscript});
      i = e + 1;
      continue;
    }
    bool assignment = name && e < s.size() && (s[e] == '=' || s.compare(e, 2, "+=") == 0);
    if (f.cmd_start && assignment && integer_names.count(word)) {
      // declare -i n; n=VALUE evaluates VALUE as arithmetic.
      stack.push_back({Kind::kLet});
      i = e;
      continue;
    }
    if (f.cmd_start && ends_word(s, e)) {
      bool declares =
          word == "declare" || word == "typeset" || word == "local" || word == "export" || word == "readonly";
      if (word == "let" || (declares && has_option(s, e, "in"))) {
        stack.push_back({Kind::kLet});
        i = e;
        continue;
      }
      // unset 'a[$(cmd)]', read, printf -v and test -v evaluate a name's subscript.
      if (declares || word == "unset" || word == "read" || word == "mapfile" || word == "readarray" ||
          ((word == "printf" || word == "test" || word == "[") && has_option(s, e, "v"))) {
        Frame n{Kind::kNames};
        n.names_only = declares;
        stack.push_back(n);
        i = e;
        continue;
      }
    }
    if (f.cmd_start && word == "case" && ends_word(s, e)) ++f.cases;
    if (f.cmd_start && word == "esac" && ends_word(s, e) && f.cases > 0) --f.cases;
    f.cmd_start = f.cmd_start && (assignment || (ends_word(s, e) && is_reserved(word)));
    i = e > i ? e : i + 1;
  }
  return out;
}

}  // namespace ferry::workflow
