// login_shell_command: POSIX sh text made into a command any login shell runs.
//
// sshd hands a remote command to the user's login shell (`$SHELL -c TEXT`), which
// may be csh, tcsh or fish, none of which reads sh syntax ($(...), case, [ ]).
// So ferry sends `exec /bin/sh -c WORD`, where WORD reads as the same bytes in all
// of them: plain runs in single quotes, and ' \ ! each outside the quotes behind a
// backslash (fish reads \\ and \' inside single quotes; csh expands ! even there).
// A newline has no such form (csh refuses one inside quotes), so it is refused.
// Pure function.
#pragma once

#include <string>

#include "base/status.h"

namespace ferry {

/// `exec /bin/sh -c '...'` around `posix_text`, for any login shell; an
/// InvalidArgument naming the text when it holds a newline or a NUL.
Result<std::string> login_shell_command(const std::string& posix_text);

}  // namespace ferry
