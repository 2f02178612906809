// HTML escaping for everything a report takes from a run (names, errors, paths,
// decoded model output): text and attribute values alike. Any thread.
#pragma once

#include <string>

namespace ferry::report {

/// `& < > " '` become entities; bytes that are not valid UTF-8 and control
/// characters other than tab and newline become U+FFFD, so no run can inject markup
/// or break the page's encoding.
std::string html_escape(const std::string& text);

}  // namespace ferry::report
