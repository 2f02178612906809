// Small POSIX file helpers shared by the agent and the coordinator: whole-file
// read, atomic write (temp + fsync + rename, so a reader sees the old file or the
// new one, never half of it), mkdir -p. Any thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace ferry {

/// The whole file; past `max_bytes` an invalid_argument naming the path and the cap
/// (files from elsewhere: a model's tokenizer or config must not fill memory).
Result<std::string> read_file(const std::string& path, size_t max_bytes = SIZE_MAX);
/// The same of `name` in the folder open at `dir` (AT_FDCWD: as named); errors name `shown`.
Result<std::string> read_file_at(int dir, const std::string& name, const std::string& shown,
                                 size_t max_bytes = SIZE_MAX);
/// Writes `data` to `path` atomically: a fresh, exclusively created temp file
/// beside it (mode `mode`, symlinks never followed), fsync, rename, fsync dir.
/// `durable` false skips both fsyncs: for bookkeeping whose loss in a crash only
/// costs a redo (a copy's resume hint, its lease), where two fsyncs per file
/// would be most of the time a folder of many small files takes.
Status write_file_atomic(const std::string& path, const std::string& data, int mode = 0644, bool durable = true);
/// The same of `name` (no '/') in the folder open at `dir`, which the fsync flushes.
Status write_file_atomic_at(int dir, const std::string& name, const std::string& shown, const std::string& data,
                            int mode = 0644, bool durable = true);
/// Appends `data` to `path`, creating it (mode `mode`) if needed.
Status append_file(const std::string& path, const std::string& data, int mode = 0644);
Status append_file_at(int dir, const std::string& name, const std::string& shown, const std::string& data,
                      int mode = 0644);
Status make_dirs(const std::string& path);
bool path_exists(const std::string& path);
std::string dirname_of(const std::string& path);
/// What follows the last '/' ("" for "a/").
std::string basename_of(const std::string& path);
/// Joins with '/', leaving `b` alone when it is absolute.
std::string join_path(const std::string& a, const std::string& b);
/// Whether `path` has a ".." component (it could climb out of where it was named).
bool has_dotdot_component(const std::string& path);
/// A data path of a copy on a host: relative paths are joined to `workdir` and
/// may not use ".." or pass through a symlink there (they stay inside it; see
/// base/beneath.h); absolute ones are taken as named.
Result<std::string> resolve_data_path(const std::string& workdir, const std::string& path);
/// The absolute path of the running executable ("" if unknown).
std::string self_exe();
/// A program or plugin of ferry's own (`ferry-agent`, `ferry-eval`, `libferry-eval.so`):
/// beside the running executable (a build tree), else in ../lib/ferry from it (an
/// installed ferry: /usr/bin/ferry and /usr/lib/ferry/). When neither exists, the
/// path beside the executable, for the error message.
std::string companion_path(const std::string& name);

}  // namespace ferry
