// Text from hosts (job logs, agent error strings, paths) on its way to a
// terminal: control characters are shown, not obeyed, so a job or a host cannot
// retitle the window, write the clipboard (OSC 52) or redraw the screen.
// Newlines and tabs pass; other C0 controls, DEL and C1 controls (U+0080-U+009F
// in UTF-8) become \xNN / \u00NN. Pure function, any thread.
#pragma once

#include <string>
#include <string_view>

namespace ferry {

std::string escape_controls(std::string_view text);

}  // namespace ferry
