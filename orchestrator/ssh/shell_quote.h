// shell_quote moved to base/shell_quote.h, so the agent (a direct copy's ssh
// command) quotes exactly as the coordinator does; this name stays for the SSH code.
#pragma once

#include "base/shell_quote.h"
