#include "workflows/template.h"

#include "base/split.h"

namespace ferry::workflow {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// The value of an int() reference as a bare word, or why it is not an integer.
Result<std::string> integer_value(const Reference& ref, const std::string& value) {
  size_t digits = value.size() - (!value.empty() && value[0] == '-' ? 1 : 0);
  bool ok = digits > 0 && digits <= kMaxIntDigits;
  for (size_t k = value.size() - digits; ok && k < value.size(); ++k) ok = value[k] >= '0' && value[k] <= '9';
  if (ok) return value;
  // The value may be hostile or huge: show a bounded, printable prefix.
  std::string shown;
  for (char c : value.substr(0, 60)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      shown += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    } else {
      shown += c;
    }
  }
  if (value.size() > 60) shown += "…";
  std::string inner = ref.text.substr(4, ref.text.size() - 5);
  return invalid_argument("${{ " + ref.text + " }}: the value of " + trim(inner) + " is '" + shown +
                          "', not an integer (int() takes -?[0-9]+ of at most " + std::to_string(kMaxIntDigits) +
                          " digits)");
}

Result<Reference> parse_expression(const std::string& expr, size_t offset) {
  if (expr.compare(0, 4, "int(") == 0 && expr.size() > 5 && expr.back() == ')') {
    auto r = parse_expression(trim(expr.substr(4, expr.size() - 5)), offset);
    if (!r.ok()) return r;
    r->integer = true;
    r->text = expr;
    return r;
  }
  Reference r;
  r.offset = offset;
  r.text = expr;
  auto parts = split(expr, '.');
  for (const auto& p : parts) {
    if (!is_identifier(p)) return invalid_argument("bad template expression '${{ " + expr + " }}'");
  }
  if (parts[0] == "params" && parts.size() == 2) {
    r.kind = Reference::Kind::kParam;
    r.name = parts[1];
  } else if (parts[0] == "stages" && parts.size() == 4 && parts[2] == "outputs") {
    r.kind = Reference::Kind::kStageOutput;
    r.name = parts[1];
    r.field = parts[3];
  } else if (parts[0] == "hosts" && parts.size() == 3 && (parts[2] == "workdir" || parts[2] == "address")) {
    r.kind = Reference::Kind::kHost;
    r.name = parts[1];
    r.field = parts[2];
  } else if (parts[0] == "run" && parts.size() == 2 && parts[1] == "id") {
    r.kind = Reference::Kind::kRun;
    r.name = "id";
  } else {
    return invalid_argument("unknown template expression '${{ " + expr +
                            " }}' (expected params.NAME, stages.NAME.outputs.KEY, hosts.NAME.workdir, "
                            "hosts.NAME.address or run.id, or int( ) of one)");
  }
  return r;
}

}  // namespace

Result<std::vector<Reference>> parse_references(const std::string& s) {
  std::vector<Reference> refs;
  size_t pos = 0;
  for (;;) {
    size_t open = s.find("${{", pos);
    if (open == std::string::npos) break;
    size_t close = s.find("}}", open + 3);
    if (close == std::string::npos) return invalid_argument("unterminated '${{' (missing '}}')");
    auto ref = parse_expression(trim(s.substr(open + 3, close - open - 3)), open);
    if (!ref.ok()) return ref.status();
    refs.push_back(std::move(ref).value());
    pos = close + 2;
  }
  return refs;
}

Result<std::string> expand_template(const std::string& s, const Resolver& resolve, bool quote) {
  auto refs = parse_references(s);
  if (!refs.ok()) return refs.status();
  std::string out;
  size_t pos = 0;
  for (const auto& ref : *refs) {
    out += s.substr(pos, ref.offset - pos);
    auto value = resolve(ref);
    if (!value.ok()) return value.status();
    if (ref.integer) {
      auto number = integer_value(ref, *value);
      if (!number.ok()) return number.status();
      out += *number;  // only digits: one word, and a number in arithmetic
    } else {
      out += quote ? shell_quote(*value) : *value;
    }
    pos = s.find("}}", ref.offset) + 2;
  }
  out += s.substr(pos);
  return out;
}

}  // namespace ferry::workflow
