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

// A name bash would assign to or look up: letters, digits and _, not first a digit.
bool is_name(const std::string& word) {
  if (word.empty() || std::isdigit(static_cast<unsigned char>(word[0]))) return false;
  for (char w : word) {
    if (!is_name_char(w)) return false;
  }
  return true;
}

// The text that opens a level, and the level it opens.
struct Opening {
  const char* text;
  Kind kind;
  bool bracket = false;  // see Frame::bracket
};

// Openings that nest anywhere but in single quotes; $(( before $(.
const Opening kExpansionOpenings[] = {
    {"`", Kind::kBackquote}, {"$((", Kind::kArith},      {"$(", Kind::kSubst},
    {"${", Kind::kBrace},    {"$[", Kind::kArith, true},
};

// Openings of quoted text, which do not nest inside "…".
const Opening kQuoteOpenings[] = {{"$'", Kind::kAnsi}, {"'", Kind::kSingle}, {"\"", Kind::kDouble}};

// One pass over a command, as sh and bash nest it: `stack_` holds the levels the
// scan is inside, innermost last. Each step consumes at least one character, or
// closes a level that ends before the character, so the level below reads it.
class TemplateScanner {
 public:
  explicit TemplateScanner(const std::string& s) : s_(s) {}

  std::vector<UnsafeTemplate> scan() {
    while (i_ < s_.size()) step();
    return std::move(out_);
  }

 private:
  // The steps are tried in this order: a template anywhere, then what ends the
  // innermost level or opens a new one, then the level's own rule.
  void step() {
    if (template_here() || quoted_text() || escaped_template() || open_first(kExpansionOpenings) ||
        double_quoted_text() || open_first(kQuoteOpenings) || expression_level())
      return;
    command_level(stack_.back());
  }

  bool at_template(size_t k) const { return s_.compare(k, 3, "${{") == 0; }

  size_t skip_template(size_t k) const {
    size_t end = s_.find("}}", k + 3);
    return end == std::string::npos ? s_.size() : end + 2;
  }

  void report(size_t k, const std::string& where) {
    if (!where.empty() && !is_integer_template(s_, k)) out_.push_back({k, where});
  }

  bool template_here() {
    if (!at_template(i_)) return false;
    report(i_, place(stack_));
    i_ = skip_template(i_);
    Frame& f = stack_.back();
    if (is_command_level(f.kind)) f.cmd_start = false;
    return true;
  }

  // '…', $'…' and `…`: text whose end is one character.
  bool quoted_text() {
    const Kind kind = stack_.back().kind;
    const char c = s_[i_];
    if (kind == Kind::kSingle) {
      if (c == '\'') stack_.pop_back();
      ++i_;
      return true;
    }
    if (kind != Kind::kAnsi && kind != Kind::kBackquote) return false;
    if (c == '\\') {
      if (at_template(i_ + 1)) report(i_ + 1, place(stack_));
      i_ += 2;
    } else {
      if (c == (kind == Kind::kAnsi ? '\'' : '`')) stack_.pop_back();
      ++i_;
    }
    return true;
  }

  // A backslash before ${{ quotes the rendered word's opening quote, and $ before
  // it makes $'…' of it (bash), whose backslashes a value can use.
  bool escaped_template() {
    if (s_[i_] == '\\') {
      if (at_template(i_ + 1)) report(i_ + 1, "after a backslash");
      i_ += 2;
      return true;
    }
    if (s_[i_] == '$' && at_template(i_ + 1)) {
      report(i_ + 1, "after a $");
      ++i_;
      return true;
    }
    return false;
  }

  template <size_t N>
  bool open_first(const Opening (&openings)[N]) {
    for (const Opening& o : openings) {
      const size_t n = std::char_traits<char>::length(o.text);
      if (s_.compare(i_, n, o.text) != 0) continue;
      Frame f{o.kind};
      f.bracket = o.bracket;
      stack_.push_back(f);
      i_ += n;
      return true;
    }
    return false;
  }

  bool double_quoted_text() {
    if (stack_.back().kind != Kind::kDouble) return false;
    if (s_[i_] == '"') stack_.pop_back();
    ++i_;
    return true;
  }

  // Levels that hold an expression or names, not commands; false at a command level.
  bool expression_level() {
    Frame& f = stack_.back();
    switch (f.kind) {
      case Kind::kArith:
        if (f.bracket) {
          bracketed(f, '[', ']');
        } else {
          arithmetic_in_parens(f);
        }
        return true;
      case Kind::kBrace: bracketed(f, '{', '}'); return true;
      case Kind::kSubscript: bracketed(f, '[', ']'); return true;
      case Kind::kCond: conditional(); return true;
      case Kind::kLet:
      case Kind::kNames: arguments(f); return true;
      default: return false;
    }
  }

  // A level that ends at the `close` matching its opening.
  void bracketed(Frame& f, char open, char close) {
    const char c = s_[i_];
    if (c == open) ++f.depth;
    if (c == close && f.depth-- == 0) stack_.pop_back();
    ++i_;
  }

  // $(( … )), (( … )): ends at a "))" outside nested parentheses.
  void arithmetic_in_parens(Frame& f) {
    const char c = s_[i_];
    if (c == '(') {
      ++f.depth;
    } else if (c == ')') {
      if (f.depth == 0 && i_ + 1 < s_.size() && s_[i_ + 1] == ')') {
        stack_.pop_back();
        ++i_;
      } else if (f.depth > 0) {
        --f.depth;
      }
    }
    ++i_;
  }

  // [[ … ]]: ends at a "]]" word.
  void conditional() {
    if (s_.compare(i_, 2, "]]") == 0 && starts_word(s_, i_) && ends_word(s_, i_ + 2)) {
      stack_.pop_back();
      i_ += 2;
      return;
    }
    ++i_;
  }

  // The arguments of let and declare -i (kLet), or of a command that reads
  // variable names (kNames). let's names become integer names.
  void arguments(Frame& f) {
    const char c = s_[i_];
    // Its command ends here; the level below sees the same character.
    if (c == '\n' || c == ';' || c == '&' || c == '|' || c == ')') {
      stack_.pop_back();
      return;
    }
    if (blank(c)) {
      f.after_eq = false;
      if (i_ > 0 && s_[i_ - 1] != '<' && s_[i_ - 1] != '>' && !blank(s_[i_ - 1])) f.redirect = false;
    }
    if (c == '=') f.after_eq = true;
    if (c == '<' || c == '>') f.redirect = true;
    if (f.kind == Kind::kLet && starts_word(s_, i_) && (std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      size_t e = i_;
      while (e < s_.size() && is_name_char(s_[e])) ++e;
      integer_names_.insert(s_.substr(i_, e - i_));
      i_ = e;
      return;
    }
    ++i_;
  }

  // Command levels: comments, here-documents, operators, words.
  void command_level(Frame& f) {
    const char c = s_[i_];
    if (c == '#' && starts_word(s_, i_)) {
      comment();
    } else if (s_.compare(i_, 2, "<<") == 0 && s_.compare(i_, 3, "<<<") != 0) {
      i_ += 2;
      pending_.push_back(read_heredoc_word(s_, i_));
      f.cmd_start = false;
    } else if (c == '\n') {
      f.cmd_start = true;
      ++i_;
      if (!pending_.empty()) heredoc_bodies();
    } else if (c == ';' || c == '&' || c == '|') {
      f.cmd_start = true;
      ++i_;
    } else if (c == ')') {
      close_paren(f);
    } else if (c == '(') {
      open_paren(f);
    } else if (blank(c) || !starts_word(s_, i_)) {
      ++i_;
    } else {
      command_word(f);
    }
  }

  // A value's newline would end the comment and run its next line.
  void comment() {
    for (; i_ < s_.size() && s_[i_] != '\n'; ++i_) {
      if (at_template(i_)) {
        report(i_, "a comment");
        i_ = skip_template(i_) - 1;
      }
    }
  }

  // Here-document bodies start on the line after their `<<`, one after another.
  void heredoc_bodies() {
    for (const Heredoc& h : pending_) {
      while (i_ < s_.size()) {
        size_t eol = s_.find('\n', i_);
        if (eol == std::string::npos) eol = s_.size();
        size_t start = i_;
        if (h.strip_tabs) {
          while (start < eol && s_[start] == '\t') ++start;
        }
        if (s_.compare(start, eol - start, h.delim) == 0) {
          i_ = eol < s_.size() ? eol + 1 : eol;
          break;
        }
        for (size_t k = i_; k < eol; ++k) {
          if (at_template(k)) {
            if (h.expands) report(k, "a here-document");
            k = skip_template(k) - 1;
          }
        }
        i_ = eol < s_.size() ? eol + 1 : eol;
      }
    }
    pending_.clear();
  }

  // ')' ends a $( … ), unless it closes a group or a case pattern inside it.
  void close_paren(Frame& f) {
    if (f.kind == Kind::kSubst && f.depth == 0 && f.cases == 0) {
      stack_.pop_back();
    } else {
      if (f.depth > 0) --f.depth;
      f.cmd_start = true;
    }
    ++i_;
  }

  // (( at a command's start is arithmetic; any other ( opens a group.
  void open_paren(Frame& f) {
    if (f.cmd_start && s_.compare(i_, 2, "((") == 0) {
      stack_.push_back({Kind::kArith});
      i_ += 2;
      return;
    }
    ++f.depth;
    f.cmd_start = true;
    ++i_;
  }

  // Where the word at i stops being a plain name: at an assignment's = or +=, a
  // subscript's [, or an expansion or quote.
  size_t name_end(size_t i) const {
    size_t e = i;
    if (s_.compare(i, 2, "[ ") == 0) ++e;  // the test command `[`
    while (e < s_.size() && !ends_word(s_, e) && s_[e] != '=' && s_[e] != '[' && s_[e] != '+' && s_[e] != '$' &&
           s_[e] != '"' && s_[e] != '\'' && s_[e] != '`' && s_[e] != '\\')
      ++e;
    return e;
  }

  // A word at a command level: [[, an assignment, a command whose arguments bash
  // evaluates, case and esac, or a plain word.
  void command_word(Frame& f) {
    if (f.cmd_start && s_.compare(i_, 2, "[[") == 0 && ends_word(s_, i_ + 2)) {
      stack_.push_back({Kind::kCond});
      i_ += 2;
      return;
    }
    const size_t e = name_end(i_);
    const std::string word = s_.substr(i_, e - i_);
    const bool name = is_name(word);
    if (f.cmd_start && name && e < s_.size() && s_[e] == '[') {
      // a[…]=v: bash evaluates the subscript, and a value's own a[$(…)] in it runs.
      stack_.push_back({Kind::kSubscript});
      i_ = e + 1;
      return;
    }
    const bool assignment = name && e < s_.size() && (s_[e] == '=' || s_.compare(e, 2, "+=") == 0);
    if (f.cmd_start && assignment && integer_names_.count(word)) {
      // declare -i n; n=VALUE evaluates VALUE as arithmetic.
      stack_.push_back({Kind::kLet});
      i_ = e;
      return;
    }
    if (f.cmd_start && ends_word(s_, e) && open_evaluated_arguments(word, e)) return;
    if (f.cmd_start && word == "case" && ends_word(s_, e)) ++f.cases;
    if (f.cmd_start && word == "esac" && ends_word(s_, e) && f.cases > 0) --f.cases;
    f.cmd_start = f.cmd_start && (assignment || (ends_word(s_, e) && is_reserved(word)));
    i_ = e > i_ ? e : i_ + 1;
  }

  // Commands whose arguments bash evaluates: let and declare -i as arithmetic;
  // unset 'a[$(cmd)]', read, printf -v, test -v and declare as names whose
  // subscripts it evaluates. `e` is the end of the command's name.
  bool open_evaluated_arguments(const std::string& word, size_t e) {
    const bool declares =
        word == "declare" || word == "typeset" || word == "local" || word == "export" || word == "readonly";
    if (word == "let" || (declares && has_option(s_, e, "in"))) {
      stack_.push_back({Kind::kLet});
      i_ = e;
      return true;
    }
    if (declares || word == "unset" || word == "read" || word == "mapfile" || word == "readarray" ||
        ((word == "printf" || word == "test" || word == "[") && has_option(s_, e, "v"))) {
      Frame n{Kind::kNames};
      n.names_only = declares;
      stack_.push_back(n);
      i_ = e;
      return true;
    }
    return false;
  }

  const std::string& s_;
  size_t i_ = 0;
  std::vector<UnsafeTemplate> out_;
  std::vector<Frame> stack_ = {{Kind::kCommand}};
  std::vector<Heredoc> pending_;  // here-documents whose bodies start on the next line
  // Names declared -i (or -n) so far: assigning to one evaluates the value.
  std::set<std::string> integer_names_;
};

}  // namespace

std::vector<UnsafeTemplate> unsafe_templates(const std::string& s) { return TemplateScanner(s).scan(); }

}  // namespace ferry::workflow
