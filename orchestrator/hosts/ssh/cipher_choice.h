// cipher_choice: which SSH ciphers the coordinator offers first.
//
// libssh 0.10 offers chacha20-poly1305 first. On a CPU with AES instructions
// AES-GCM costs less on both ends (OpenSSH's sshd pairs ChaCha20 with its own
// portable Poly1305, while AES-GCM runs on AES-NI + CLMUL), and the relay is bound
// by the ciphers' CPU. So: AES-GCM first when this CPU has AES, else libssh's order.
// Only an offer: the server still picks the first of ours it allows. A host's
// `ciphers:` (SshTarget::ciphers) or the ssh config's Ciphers overrides it.
// Any thread.
#pragma once

#include <string>

namespace ferry {

/// True when this CPU has AES instructions (x86 AES-NI, arm64 AES).
bool cpu_has_aes();

/// The cipher list to offer by default: "" means libssh's own order.
std::string default_cipher_preference();

}  // namespace ferry
