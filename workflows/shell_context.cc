#include "workflows/shell_context.h"

#include <cctype>

namespace ferry::workflow {
namespace {

// kSubst: $( … ) inside double quotes. kBackquote: `…`, whose end is the next
// unescaped backquote whatever quotes stand between, so a value's own backquote
// ends it (bash in POSIX mode then runs what follows).
enum class Ctx { kPlain, kSingle, kDouble, kSubst, kBackquote };

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
  while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != ';' && s[i] != '|' &&
         s[i] != '&' && s[i] != '<' && s[i] != '>' && s[i] != ')') {
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

// Whether s[i] begins a word, where a `#` begins a comment: after a blank or an
// operator.
bool starts_word(const std::string& s, size_t i) {
  if (i == 0) return true;
  char p = s[i - 1];
  return std::isspace(static_cast<unsigned char>(p)) || p == ';' || p == '&' || p == '|' || p == '(' || p == ')';
}

}  // namespace

std::vector<UnsafeTemplate> unsafe_templates(const std::string& s) {
  std::vector<UnsafeTemplate> out;
  std::vector<Ctx> stack = {Ctx::kPlain};
  std::vector<Heredoc> pending;
  size_t i = 0;
  auto at_template = [&](size_t k) { return s.compare(k, 3, "${{") == 0; };
  auto skip_template = [&](size_t k) {
    size_t end = s.find("}}", k + 3);
    return end == std::string::npos ? s.size() : end + 2;
  };
  while (i < s.size()) {
    Ctx ctx = stack.back();
    if (at_template(i)) {
      if (ctx == Ctx::kSingle) out.push_back({i, "single quotes"});
      if (ctx == Ctx::kDouble) out.push_back({i, "double quotes"});
      if (ctx == Ctx::kBackquote) out.push_back({i, "backquotes"});
      i = skip_template(i);
      continue;
    }
    char c = s[i];
    if (ctx == Ctx::kSingle) {
      if (c == '\'') stack.pop_back();
      ++i;
      continue;
    }
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (ctx == Ctx::kBackquote) {
      if (c == '`') stack.pop_back();
      ++i;
      continue;
    }
    if (c == '`') {
      stack.push_back(Ctx::kBackquote);
      ++i;
      continue;
    }
    if (ctx == Ctx::kDouble) {
      if (c == '"') {
        stack.pop_back();
      } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '(') {
        stack.push_back(Ctx::kSubst);
        ++i;
      }
      ++i;
      continue;
    }
    // kPlain or kSubst: words, quotes, comments, here-documents.
    if (c == '\'') {
      stack.push_back(Ctx::kSingle);
    } else if (c == '"') {
      stack.push_back(Ctx::kDouble);
    } else if (c == ')' && ctx == Ctx::kSubst) {
      stack.pop_back();
    } else if (c == '#' && starts_word(s, i)) {
      // A value's newline would end the comment and run its next line.
      for (; i < s.size() && s[i] != '\n'; ++i) {
        if (at_template(i)) {
          out.push_back({i, "a comment"});
          i = skip_template(i) - 1;
        }
      }
      continue;
    } else if (c == '<' && s.compare(i, 2, "<<") == 0 && s.compare(i, 3, "<<<") != 0) {
      i += 2;
      pending.push_back(read_heredoc_word(s, i));
      continue;
    } else if (c == '\n' && !pending.empty()) {
      // The bodies start on the next line, one after another.
      ++i;
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
              if (h.expands) out.push_back({k, "a here-document"});
              k = skip_template(k) - 1;
            }
          }
          i = eol < s.size() ? eol + 1 : eol;
        }
      }
      pending.clear();
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace ferry::workflow
