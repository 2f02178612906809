// Helpers for the copy-stage tests (issue 4): a synthetic checkpoint folder,
// byte-for-byte tree comparison, the destination's progress read from its
// .ferry-journal files, `ferry status --json` and the events table. The real
// `ferry` and `ferry-agent` binaries do the work; these only look at what they
// leave. Tests only; one thread.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/defer.h"
#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry::copytest {

constexpr int64_t kChunk =
    2 << 20; // CopySpec::chunk_size, the default the workflow gets

struct CheckpointFile {
  std::string rel;
  int64_t size = 0;
};

/// Writes a checkpoint folder shaped like a sharded HF checkpoint: `shards`
/// shards of pseudo-random bytes (std::mt19937_64, fixed seed per shard: the
/// same bytes on every run, and incompressible), a config.json and a
/// model.safetensors.index.json. Shard sizes are deliberately not multiples of
/// the chunk size, so every shard ends in a short chunk. Returns the files.
inline std::vector<CheckpointFile>
make_checkpoint(const std::string &dir, int shards, int64_t shard_bytes) {
  std::vector<CheckpointFile> out;
  ::mkdir(dir.c_str(), 0755);
  nlohmann::json weight_map = nlohmann::json::object();
  std::vector<uint64_t> buf(1 << 17); // 1 MiB
  for (int i = 0; i < shards; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", i + 1,
                  shards);
    int64_t size = shard_bytes + 4099 * (i + 1);
    std::mt19937_64 rng(0x5eed0000u + static_cast<uint64_t>(i));
    int fd =
        ::open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0) << dir << "/" << name;
    for (int64_t done = 0; done < size;) {
      for (auto &w : buf)
        w = rng();
      int64_t n = std::min<int64_t>(
          size - done, static_cast<int64_t>(buf.size() * sizeof(uint64_t)));
      EXPECT_EQ(::write(fd, buf.data(), static_cast<size_t>(n)), n);
      done += n;
    }
    ::close(fd);
    out.push_back({name, size});
    weight_map["layers." + std::to_string(i) + ".weight"] = name;
  }
  std::string config = nlohmann::json{
      {"architectures", {"Qwen3ForCausalLM"}},
      {"hidden_size", 1024},
      {"num_hidden_layers", shards},
      {"torch_dtype",
       "bfloat16"}}.dump(2);
  testing::write_text(dir + "/config.json", config);
  out.push_back({"config.json", static_cast<int64_t>(config.size())});
  int64_t total = 0;
  for (const auto &f : out)
    total += f.size;
  std::string index = nlohmann::json{
      {"metadata", {{"total_size", total}}},
      {"weight_map",
       weight_map}}.dump(2);
  testing::write_text(dir + "/model.safetensors.index.json", index);
  out.push_back(
      {"model.safetensors.index.json", static_cast<int64_t>(index.size())});
  return out;
}

inline int64_t total_bytes(const std::vector<CheckpointFile> &files) {
  int64_t t = 0;
  for (const auto &f : files)
    t += f.size;
  return t;
}

inline int64_t chunks_of(int64_t size) { return (size + kChunk - 1) / kChunk; }

/// Every name under `dir`, recursively, relative to it (files only).
inline void list_tree(const std::string &dir, const std::string &rel,
                      std::vector<std::string> *out) {
  std::string here = rel.empty() ? dir : dir + "/" + rel;
  DIR *d = ::opendir(here.c_str());
  if (!d)
    return;
  while (dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..")
      continue;
    std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::lstat((dir + "/" + r).c_str(), &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      list_tree(dir, r, out);
    } else {
      out->push_back(r);
    }
  }
  ::closedir(d);
  std::sort(out->begin(), out->end());
}

inline std::vector<std::string> list_tree(const std::string &dir) {
  std::vector<std::string> out;
  list_tree(dir, "", &out);
  return out;
}

/// Compares two files byte for byte, 4 MiB at a time; "" when identical, else
/// why.
inline std::string compare_files(const std::string &a, const std::string &b) {
  int fa = ::open(a.c_str(), O_RDONLY), fb = ::open(b.c_str(), O_RDONLY);
  std::string why;
  if (fa < 0 || fb < 0) {
    why = (fa < 0 ? a : b) + " cannot be opened";
  } else {
    std::vector<char> ba(4 << 20), bb(4 << 20);
    int64_t off = 0;
    for (;;) {
      ssize_t na = ::read(fa, ba.data(), ba.size());
      ssize_t nb = ::read(fb, bb.data(), bb.size());
      if (na != nb) {
        why = "sizes differ near byte " + std::to_string(off);
        break;
      }
      if (na <= 0)
        break;
      if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(na)) != 0) {
        why = "bytes differ in [" + std::to_string(off) + ", " +
              std::to_string(off + na) + ")";
        break;
      }
      off += na;
    }
  }
  if (fa >= 0)
    ::close(fa);
  if (fb >= 0)
    ::close(fb);
  return why;
}

/// "" when `copy` holds exactly the files of `source`, bit for bit, plus the
/// completion marker and the record of copied files and nothing else (no part,
/// journal or spec file left over).
inline std::string compare_trees(const std::string &source,
                                 const std::string &copy) {
  std::vector<std::string> want = list_tree(source);
  std::vector<std::string> have = list_tree(copy);
  std::vector<std::string> have_data;
  for (const auto &h : have) {
    if (h != ".ferry-complete" && h != ".ferry-files")
      have_data.push_back(h);
  }
  if (want != have_data) {
    std::string s = "file lists differ: source has";
    for (const auto &w : want)
      s += " " + w;
    s += "; copy has";
    for (const auto &h : have)
      s += " " + h;
    return s;
  }
  for (const auto &rel : want) {
    std::string why = compare_files(source + "/" + rel, copy + "/" + rel);
    if (!why.empty())
      return rel + ": " + why;
  }
  return "";
}

/// Bytes the receiver at `dest_dir` has verified so far: chunks journaled in
/// part files plus files already renamed into place.
inline int64_t bytes_arrived(const std::string &dest_dir,
                             const std::vector<CheckpointFile> &files) {
  int64_t n = 0;
  for (const auto &f : files) {
    std::string dest = dest_dir + "/" + f.rel;
    struct stat st;
    if (::stat(dest.c_str(), &st) == 0 && st.st_size == f.size) {
      n += f.size;
      continue;
    }
    std::string journal = testing::read_text(dest + ".ferry-journal");
    for (size_t pos = 0; pos < journal.size();) {
      size_t end = journal.find('\n', pos);
      if (end == std::string::npos)
        break;
      int64_t index = std::atoll(journal.c_str() + pos);
      n += std::max<int64_t>(0, std::min(kChunk, f.size - index * kChunk));
      pos = end + 1;
    }
  }
  return n;
}

/// Polls `pred` every millisecond until it holds or `timeout` passes: local
/// copies move a chunk every few milliseconds, too fast for the 20 ms of
/// testing::wait_until when a test must catch the copy in the middle.
inline bool wait_fast(const std::function<bool()> &pred,
                      std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred())
      return true;
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Overwrites `len` bytes at `offset` of `path` with bytes that differ from
/// what is there.
inline void corrupt(const std::string &path, int64_t offset, int64_t len) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  std::string data(static_cast<size_t>(len), '\0');
  ASSERT_EQ(::pread(fd, data.data(), data.size(), offset), len);
  for (auto &c : data)
    c = static_cast<char>(~c);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), offset), len);
  ::close(fd);
}

struct Event {
  std::string stage, type;
  int64_t ts_ms = 0;
  nlohmann::json detail;
};

using ::ferry::testing::Defer;

/// The common fixture: a FERRY_HOME, a work folder (workflow file, keep_local,
/// host workdirs), the `ferry` binary, status and events.
class CopyTestBase : public testing::FerryHomeTest {
 protected:
  CopyTestBase() : FerryHomeTest(300) {}

  /// The run id `ferry run` printed first ("run NAME-N (FILE)").
  static std::string run_id(const testing::ProcessResult &r) {
    if (r.out.rfind("run ", 0) != 0)
      return "";
    return r.out.substr(4, r.out.find(' ', 4) - 4);
  }

  static double metric(const nlohmann::json &s, const std::string &key) {
    if (!s.contains("metrics") || !s["metrics"].is_object())
      return -1;
    return s["metrics"].value(key, -1.0);
  }

  static std::string output(const nlohmann::json &s, const std::string &key) {
    if (!s.contains("outputs") || !s["outputs"].is_object())
      return "";
    return s["outputs"].value(key, std::string());
  }

  /// A copy stage `s` that succeeded at its first attempt: `dest` and the kept
  /// copy `keep` are `source` byte for byte, each with the manifest's marker.
  /// (`s` by value: a missing key reads as null, as in the test's own copy.)
  static void expect_copied_at_first_attempt(nlohmann::json s, const std::string& source, const std::string& dest,
                                             const std::string& keep) {
    EXPECT_EQ(s["state"], "succeeded") << s.dump(2);
    EXPECT_EQ(s["attempt"], 1);
    EXPECT_EQ(compare_trees(source, dest), "");
    EXPECT_EQ(compare_trees(source, keep), "");
    std::string manifest = output(s, "manifest_hash");
    ASSERT_EQ(manifest.size(), 32u) << s.dump(2);
    EXPECT_EQ(testing::read_text(dest + "/.ferry-complete"), manifest + "\n");
    EXPECT_EQ(testing::read_text(keep + "/.ferry-complete"), manifest + "\n");
  }

  /// Every event of `run` (stage "" = the run's own, "*" = all), in the order
  /// recorded.
  std::vector<Event> events(const std::string &run,
                            const std::string &stage_name = "*") {
    std::string sql =
        "SELECT stage, type, ts_ms, detail FROM events WHERE run_id='" + run +
        "'" + (stage_name == "*" ? "" : " AND stage='" + stage_name + "'") +
        " ORDER BY seq";
    auto r = testing::run_process(
        {"sqlite3", "-cmd", ".timeout 10000", "-json", home_.file("ferry.db"), sql}, {}, 30);
    std::vector<Event> out;
    if (r.exit_code != 0 || r.out.empty())
      return out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array())
      return out;
    for (const auto &e : j) {
      Event ev;
      ev.stage = e.value("stage", "");
      ev.type = e.value("type", "");
      ev.ts_ms = e.value("ts_ms", int64_t{0});
      ev.detail = nlohmann::json::parse(e.value("detail", std::string("null")),
                                        nullptr, false);
      out.push_back(ev);
    }
    return out;
  }

  static int count(const std::vector<Event> &evs, const std::string &type) {
    int n = 0;
    for (const auto &e : evs)
      n += e.type == type;
    return n;
  }

  static std::string dump(const std::vector<Event> &evs) {
    std::string s;
    for (const auto &e : evs)
      s += std::to_string(e.ts_ms) + " " + e.stage + " " + e.type + " " +
           e.detail.dump() + "\n";
    return s;
  }

  static void end_process(pid_t pid) {
    if (pid > 0 && testing::process_running(pid)) {
      ::kill(pid, SIGKILL);
      testing::wait_process(pid, 10);
    }
  }
};

} // namespace ferry::copytest
