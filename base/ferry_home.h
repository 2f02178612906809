// Where ferry keeps its own state on the coordinator: $FERRY_HOME, defaulting to
// ~/.local/share/ferry. Holds the default state database (ferry.db; logs, reports and
// run locks go beside whichever database `--db` names) and the host keys trusted on
// first use (known_hosts, whatever the database). Any thread.
#pragma once

#include <string>

namespace ferry {

/// $FERRY_HOME, else $HOME/.local/share/ferry; "" when neither is set (no shared
/// fallback such as /tmp: the caller names what to set).
std::string ferry_home_dir();

}  // namespace ferry
