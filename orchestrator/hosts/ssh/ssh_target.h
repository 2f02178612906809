// SshTarget: where and how to reach one host over SSH.
//
// A plain value filled from a workflow's host entry (or the testbed's hosts.json)
// and handed to SshSession / SshTransport. Any thread.
#pragma once

#include <string>

namespace ferry {

struct SshTarget {
  std::string name;     ///< the workflow's name for the host ("A", "h1"); messages only
  std::string address;  ///< IP, DNS name or a Host alias from the ssh config
  int port = 22;        ///< 22 means "default": a Port from the ssh config wins over it
  std::string user;     ///< "" = User from the ssh config, else the local user name
  std::string identity;  ///< private key file tried first; "" = ssh-agent + config + ~/.ssh/id_*
  std::string known_hosts;  ///< "" = ~/.ssh/known_hosts
  bool trust_first_use = false;  ///< record an unknown host key (never a changed one)
  /// Where keys trusted on first use are recorded, and looked up after `known_hosts`:
  /// "" = $FERRY_HOME/known_hosts (base/ferry_home.h). Never the user's own file.
  std::string first_use_known_hosts;
  std::string workdir;   ///< remote working directory: absolute, or relative to the login dir
  int connect_timeout_ms = 10000;  ///< TCP connect + handshake + host key + auth
  /// The ssh client config to read: "" = ~/.ssh/config then /etc/ssh/ssh_config
  /// (as OpenSSH does); a path = only that file; "none" = no config at all.
  std::string ssh_config;
  /// Ciphers to offer, comma-separated, overriding the ssh config's Ciphers;
  /// "" = the config's, else default_cipher_preference() (cipher_choice.h).
  std::string ciphers;
};

}  // namespace ferry
