// `ferry examples DIR`: copies the example workflows that came with this ferry into
// DIR, so that the README's `ferry run examples/first/workflow.yaml` works from an
// installed package too. They are found where this ferry's own layout puts them:
// PREFIX/share/doc/ferry/examples beside PREFIX/bin/ferry (the package, `cmake
// --install`), else the source tree's examples/ (a ferry run from its build).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "base/file_util.h"
#include "orchestrator/cli.h"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

// What `ferry examples` copies: what the install rule ships (cmake/FerryPackage.cmake),
// not the demo's C++ sources beside them in the source tree.
bool shipped(const fs::path& file) {
  const std::string ext = file.extension().string();
  return ext == ".yaml" || ext == ".md" || ext == ".jsonl";
}

// The examples folder of this ferry, or "" when it has none.
std::string examples_source() {
  std::string exe = self_exe();
  if (!exe.empty()) {
    std::string installed = dirname_of(dirname_of(exe)) + "/share/doc/ferry/examples";
    if (path_exists(installed + "/first/workflow.yaml")) return installed;
  }
#ifdef FERRY_SOURCE_EXAMPLES
  if (path_exists(std::string(FERRY_SOURCE_EXAMPLES) + "/first/workflow.yaml")) return FERRY_SOURCE_EXAMPLES;
#endif
  return "";
}

}  // namespace

int cmd_examples(const std::string& dir) {
  const std::string from = examples_source();
  if (from.empty()) {
    return fail(not_found("this ferry has no examples: neither " + dirname_of(dirname_of(self_exe())) +
                          "/share/doc/ferry/examples nor a source tree beside its build"));
  }
  std::vector<std::string> files;  // relative to `from`
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && shipped(it->path())) files.push_back(fs::relative(it->path(), from, ec).string());
  }
  if (ec) return fail(internal_error(from + ": " + ec.message()));
  std::sort(files.begin(), files.end());
  // All or nothing: a file already there is the user's, perhaps edited.
  std::vector<std::string> existing;
  for (const auto& f : files) {
    if (path_exists(join_path(dir, f))) existing.push_back(join_path(dir, f));
  }
  if (!existing.empty()) {
    std::string list;
    for (const auto& e : existing) list += "\n  " + e;
    return fail(
        invalid_argument("not copying the examples: these files exist already and are never overwritten "
                         "(choose another folder, or move them away):" +
                         list));
  }
  for (const auto& f : files) {
    const std::string to = join_path(dir, f);
    auto text = read_file(join_path(from, f));
    if (!text.ok()) return fail(text.status());
    Status s = make_dirs(dirname_of(to));
    if (s.ok()) s = write_file_atomic(to, *text, 0644, /*durable=*/false);
    if (!s.ok()) return fail(s);
  }
  std::cout << "copied " << files.size() << " files of ferry's examples from " << from << " to " << dir << "\n"
            << "next:\n"
            << "  ferry run " << join_path(dir, "first/workflow.yaml")
            << "   # two hosts, a copy between them; then: ferry logs last check\n"
            << "  ferry run " << join_path(dir, "hello/workflow.yaml") << "   # stages, outputs, a retry\n"
            << "  ferry run " << join_path(dir, "dflash-tiny/watch.yaml")
            << "   # the demo: a tiny drafter trained and evaluated checkpoint by checkpoint (minutes)\n"
            << "  ferry report last   # the last run as one HTML page\n";
  return kExitOk;
}

}  // namespace ferry::cli
