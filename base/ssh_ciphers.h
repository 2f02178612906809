// The SSH ciphers ferry's client (libssh 0.10) speaks, for checking a host's
// `ciphers:` list before any connection is tried. Any thread; no state.
#pragma once

#include <string>
#include <vector>

namespace ferry {

/// Every cipher name libssh 0.10 accepts in SSH_OPTIONS_CIPHERS_C_S (OpenSSL build).
inline const std::vector<std::string>& ssh_cipher_names() {
  static const std::vector<std::string> names = {
      "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
      "aes128-ctr", "aes192-ctr", "aes256-ctr", "aes128-cbc", "aes192-cbc", "aes256-cbc", "3des-cbc"};
  return names;
}

/// Splits "a,b,c" (spaces around names allowed). An empty item is kept as "".
inline std::vector<std::string> split_cipher_list(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(' '), e = cur.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else cur += c;
  }
  flush();
  return out;
}

/// "" when `list` names only known ciphers, else what is wrong with it.
inline std::string cipher_list_problem(const std::string& list) {
  for (const std::string& name : split_cipher_list(list)) {
    if (name.empty()) return "an empty name in the list '" + list + "'";
    bool known = false;
    for (const std::string& k : ssh_cipher_names()) known = known || k == name;
    if (!known) {
      std::string all;
      for (const std::string& k : ssh_cipher_names()) all += (all.empty() ? "" : ", ") + k;
      return "unknown cipher '" + name + "' (known: " + all + ")";
    }
  }
  return "";
}

}  // namespace ferry
