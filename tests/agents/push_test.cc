// The direct copy's sender (agents/push.h): its progress lines, which the
// coordinator parses into the stage's progress; the ssh command it builds; and
// the real `ferry-agent push` end to end on this machine, with a stand-in for
// ssh that runs the remote command locally (the testbed tests in
// tests/copy/testbed_copy_test.cc use the real OpenSSH client between hosts).
//
// Test data: small synthetic folders written here (fixed seeds, via
// copy_test_util.h's make_checkpoint), sizes chosen to end in short chunks.
#include "agents/push.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/login_shell_command.h"
#include "tests/copy/copy_test_util.h"
#include "tests/support/process.h"
#include "transfer/push_progress.h"

namespace ferry {
namespace {

TEST(PushProgressTest, RoundTripsThroughTheLogLine) {
  PushProgress p;
  p.bytes_done = 100663296;
  p.bytes_total = 167772160;
  p.bytes_sent = 104857600;
  p.bytes_resent = 4194304;
  p.bytes_skipped = 2097152;
  p.rate = 52428800.4;
  p.elapsed_ms = 1920;
  p.files_done = 2;
  p.files = 6;
  std::string line = format_push_progress(p);
  EXPECT_EQ(line,
            "ferry-push progress done=100663296 total=167772160 sent=104857600 resent=4194304 skipped=2097152 "
            "rate=52428800 elapsed_ms=1920 files=2/6");
  auto back = parse_push_progress(line + "\n");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->bytes_done, p.bytes_done);
  EXPECT_EQ(back->bytes_total, p.bytes_total);
  EXPECT_EQ(back->bytes_sent, p.bytes_sent);
  EXPECT_EQ(back->bytes_resent, p.bytes_resent);
  EXPECT_EQ(back->bytes_skipped, p.bytes_skipped);
  EXPECT_DOUBLE_EQ(back->rate, 52428800);
  EXPECT_EQ(back->elapsed_ms, 1920);
  EXPECT_EQ(back->files_done, 2);
  EXPECT_EQ(back->files, 6);
}

TEST(PushProgressTest, IgnoresUnknownKeysAndNeedsOnlyDoneAndTotal) {
  auto p = parse_push_progress("ferry-push progress total=10 cipher=aes128-gcm done=4\r\n");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->bytes_done, 4);
  EXPECT_EQ(p->bytes_total, 10);
  EXPECT_EQ(p->bytes_sent, 0);
  EXPECT_EQ(p->files, 0);
}

TEST(PushProgressTest, RefusesWhatIsNotAWellFormedProgressLine) {
  for (const char* line : {
           "", "ferry-push: stream 2 lost h2 (…); reconnecting",
           "ferry-push progress",                                    // nothing
           "ferry-push progress done=4",                             // no total
           "ferry-push progress total=4",                            // no done
           "ferry-push progress done=5 total=4",                     // more done than there is
           "ferry-push progress done=-1 total=4",                    // negative
           "ferry-push progress done=4x total=8",                    // not a number
           "ferry-push progress done= total=8",                      // empty value
           "ferry-push progress done=4 total=8 rate=nan",            // not a rate
           "ferry-push progress done=4 total=8 files=3/2",           // more files done than there are
           "ferry-push progress done=4 total=8 files=3",             // no slash
           "ferry-push progress done=4 total=8 garbage",             // a word without '='
           "  ferry-push progress done=4 total=8",                   // not at the start of the line
           "ferry-push progress done=99999999999999999999 total=8",  // overflows
       }) {
    EXPECT_FALSE(parse_push_progress(line).has_value()) << line;
  }
}

TEST(PushProgressTest, TakesTheErrorLineAndNothingElse) {
  auto e = parse_push_error("ferry-push error: on h2: no space left on device writing x.ferry-part\n");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(*e, "on h2: no space left on device writing x.ferry-part");
  EXPECT_FALSE(parse_push_error("ferry-push progress done=1 total=2").has_value());
  EXPECT_FALSE(parse_push_error("error: ferry-push").has_value());
}

PushSpec spec_for_tests() {
  PushSpec s;
  s.from = "ckpt";
  s.to = "in/ckpt";
  s.address = "198.18.0.6";
  s.dest_agent = "/w 2/.ferry/bin/ferry-agent-abc";
  s.dest_workdir = "/w 2/it's";
  return s;
}

// The remote text as the destination's login shell gets it.
std::vector<std::string> ssh_argv(const PushSpec& spec, const std::string& home, const std::string& account_home) {
  auto argv = push_ssh_command(spec, home, account_home);
  EXPECT_TRUE(argv.ok()) << argv.status().to_string();
  return argv.ok() ? *argv : std::vector<std::string>{};
}

TEST(PushSshCommandTest, StartsTheDestinationAgentQuotedAndInBatchMode) {
  testing::TempDir home;
  auto argv = ssh_argv(spec_for_tests(), home.path(), home.path());
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv.front(), "ssh");
  EXPECT_EQ(argv.back(), *login_shell_command("printf 'FERRY-PUSH-READY\\n' && exec '/w 2/.ferry/bin/ferry-agent-abc' "
                                              "serve --workdir '/w 2/it'\\''s'"));
  EXPECT_EQ(argv[argv.size() - 2], "198.18.0.6");
  EXPECT_EQ(argv[argv.size() - 3], "--");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "BatchMode=yes"), argv.end());
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-F"), argv.end()) << "ssh finds its own config";
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-p"), argv.end()) << "port 22 leaves the config's Port alone";
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-l"), argv.end());
}

TEST(PushSshCommandTest, NamesTheConfigInHomeOnlyWhenSshWouldNotFindIt) {
  testing::TempDir home, account;
  PushSpec s = spec_for_tests();
  s.port = 2222;
  s.user = "ml";
  // $HOME differs from the account's home but holds no config: nothing to name.
  auto argv = ssh_argv(s, home.path(), account.path());
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-F"), argv.end());
  ::mkdir((home.path() + "/.ssh").c_str(), 0700);
  testing::write_text(home.path() + "/.ssh/config", "Host *\n  User root\n");
  argv = ssh_argv(s, home.path(), account.path());
  auto f = std::find(argv.begin(), argv.end(), "-F");
  ASSERT_NE(f, argv.end());
  EXPECT_EQ(*(f + 1), home.path() + "/.ssh/config");
  auto p = std::find(argv.begin(), argv.end(), "-p");
  ASSERT_NE(p, argv.end());
  EXPECT_EQ(*(p + 1), "2222");
  auto l = std::find(argv.begin(), argv.end(), "-l");
  ASSERT_NE(l, argv.end());
  EXPECT_EQ(*(l + 1), "ml");
}

// Review N10: an account the password file lacks (LDAP, SSSD) gets no -F, which
// would make ssh skip /etc/ssh/ssh_config.
TEST(PushSshCommandTest, AnAccountMissingFromThePasswordFileGetsNoConfigFlag) {
  testing::TempDir home;
  ::mkdir((home.path() + "/.ssh").c_str(), 0700);
  testing::write_text(home.path() + "/.ssh/config", "Host *\n  User root\n");
  auto argv = ssh_argv(spec_for_tests(), home.path(), "");
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "-F"), argv.end());
}

// Review F23: the source's own ssh_config may say accept-new or no; the push pins it.
TEST(PushSshCommandTest, SshCommandPinsHostKeyChecking) {
  testing::TempDir home;
  auto argv = ssh_argv(spec_for_tests(), home.path(), home.path());
  auto o = std::find(argv.begin(), argv.end(), "StrictHostKeyChecking=yes");
  ASSERT_NE(o, argv.end());
  EXPECT_EQ(*(o - 1), "-o");
  EXPECT_LT(o - argv.begin(), std::find(argv.begin(), argv.end(), "--") - argv.begin()) << "an option, not a word";
}

// Review-4 F23: the destination's login shell may be csh, tcsh or fish; each runs the
// same /bin/sh text. /bin/echo stands in for the agent, and the workdir holds what
// those shells read apart from sh (\\ inside quotes for fish, ! for csh, $ and ').
TEST(PushSshCommandTest, TheRemoteTextRunsAlikeUnderShCshAndFishLoginShells) {
  testing::TempDir home;
  PushSpec s = spec_for_tests();
  s.dest_agent = "/bin/echo";
  s.dest_workdir = "/w 2/it's \\\\ a\\b !! $HOME `x` \"q\"";
  auto argv = ssh_argv(s, home.path(), home.path());
  ASSERT_FALSE(argv.empty());
  const std::string expected = "FERRY-PUSH-READY\nserve --workdir " + s.dest_workdir + "\n";
  int shells = 0;
  for (const char* shell : {"/bin/sh", "/bin/bash", "/usr/bin/tcsh", "/usr/bin/fish"}) {
    if (::access(shell, X_OK) != 0) continue;
    ++shells;
    auto r = testing::run_process({shell, "-c", argv.back()}, {}, 30);
    EXPECT_EQ(r.exit_code, 0) << shell << ": " << r.err;
    EXPECT_EQ(r.out, expected) << shell << " ran: " << argv.back();
  }
  EXPECT_GE(shells, 2) << "no login shell but sh here (scripts/install-deps.sh installs tcsh and fish)";
  s.dest_workdir = "/w\nx";
  auto refused = push_ssh_command(s, home.path(), home.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("line break"), std::string::npos) << refused.status().to_string();
}

// `ferry-agent push` for real, with `ssh` replaced by a script that skips the
// options and runs the remote command here: everything but the network.
class LocalPushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir(src_dir().c_str(), 0755);
    ::mkdir(dest_dir().c_str(), 0755);
    files_ = copytest::make_checkpoint(src_dir() + "/ckpt", 3, 5 << 20);
    testing::write_text(src_dir() + "/ckpt/empty.bin", "");
    write_ssh("while [ \"$1\" != -- ]; do shift; done\nshift 2\nexec sh -c \"$1\"\n");
  }

  std::string src_dir() const { return work_.file("src"); }
  std::string dest_dir() const { return work_.file("dest"); }

  void write_ssh(const std::string& body) {
    testing::write_text(work_.file("ssh"), "#!/bin/sh\n" + body);
    ::chmod(work_.file("ssh").c_str(), 0755);
  }

  testing::ProcessResult push(int streams = 3) { return push(spec(streams)); }
  testing::ProcessResult push(const PushSpec& s) {
    testing::write_text(work_.file("spec.json"), s.to_json().dump());
    return testing::run_process({testing::bin_dir() + "/ferry-agent", "push", work_.file("spec.json")}, {}, 120);
  }
  PushSpec spec(int streams) const {
    PushSpec s;
    s.from = "ckpt";
    s.workdir = src_dir();
    s.to = "in/ckpt";
    s.from_host = "h1";
    s.to_host = "h2";
    s.address = "198.18.0.6";
    s.dest_agent = testing::bin_dir() + "/ferry-agent";
    s.dest_workdir = dest_dir();
    s.streams = streams;
    s.ssh = work_.file("ssh");
    return s;
  }

  static std::optional<PushProgress> last_progress(const std::string& log) {
    std::optional<PushProgress> last;
    size_t pos = 0;
    while (pos < log.size()) {
      size_t end = log.find('\n', pos);
      if (end == std::string::npos) end = log.size();
      if (auto p = parse_push_progress(log.substr(pos, end - pos))) last = p;
      pos = end + 1;
    }
    return last;
  }

  testing::TempDir work_;
  std::vector<copytest::CheckpointFile> files_;
};

TEST_F(LocalPushTest, FolderArrivesBitIdenticalWithItsMarkerAndASecondPushSendsNothing) {
  auto r = push();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(copytest::compare_trees(src_dir() + "/ckpt", dest_dir() + "/in/ckpt"), "");
  std::string marker = testing::read_text(dest_dir() + "/in/ckpt/.ferry-complete");
  EXPECT_NE(r.out.find("manifest " + marker.substr(0, 32)), std::string::npos) << r.out;
  auto p = last_progress(r.out);
  ASSERT_TRUE(p.has_value()) << r.out;
  int64_t total = copytest::total_bytes(files_);
  EXPECT_EQ(p->bytes_total, total);
  EXPECT_EQ(p->bytes_done, total);
  EXPECT_EQ(p->bytes_sent, total);
  EXPECT_EQ(p->bytes_resent, 0);
  EXPECT_EQ(p->files_done, p->files);
  EXPECT_EQ(p->files, static_cast<int>(files_.size()) + 1);

  auto again = push();
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  auto q = last_progress(again.out);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->bytes_sent, 0) << again.out;
  EXPECT_EQ(q->bytes_skipped, total);
  EXPECT_EQ(testing::read_text(dest_dir() + "/in/ckpt/.ferry-complete"), marker);
}

// Review F12: chunks are read at different times, so a file rewritten during the
// push (a trainer saving over its checkpoint) would arrive as a mix of two
// versions, each chunk verified. The source is re-checked (size, mtime, inode)
// before each file's commit: the push fails, naming the file, and publishes
// nothing. The destination agent (the lying agent in front of the real one)
// rewrites one byte of the source as the first chunk reaches it.
TEST_F(LocalPushTest, ASourceRewrittenDuringThePushFailsItAndPublishesNothing) {
  std::string src = src_dir() + "/ckpt/" + files_[0].rel;
  std::string before = testing::read_text(src);
  write_ssh("while [ \"$1\" != -- ]; do shift; done\nshift 2\n"
            "export LYING_AGENT_REAL='" + testing::bin_dir() + "/ferry-agent' LYING_AGENT_WORKDIR='" + dest_dir() +
            "' LYING_AGENT_ON_OP=recv.write LYING_AGENT_ON_READ=\"printf X | dd of='" + src +
            "' bs=1 seek=7 conv=notrunc status=none\"\n"
            "exec sh -c \"$1\"\n");
  PushSpec s = spec(1);
  s.from = "ckpt/" + files_[0].rel;
  s.to = "one.bin";
  s.dest_agent = testing::bin_dir() + "/lying-agent";
  auto r = push(s);
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(testing::read_text(src), before) << "the source was rewritten during the push";
  EXPECT_NE(r.out.find("changed during the copy (modified)"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find(src), std::string::npos) << r.out;
  EXPECT_FALSE(testing::exists(dest_dir() + "/one.bin")) << "a torn file was published";
}

// A destination whose login rc prints to stdout before the remote command runs
// (a greeting, a `conda activate` note, one without its newline): the push skips
// it and the folder still arrives whole.
TEST_F(LocalPushTest, ALoginRcThatPrintsToStdoutDoesNotBreakThePush) {
  write_ssh("while [ \"$1\" != -- ]; do shift; done\nshift 2\n"
            "echo 'Welcome to h2'\nprintf 'conda: base activated'\nexec sh -c \"$1\"\n");
  auto r = push(2);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const auto& f : files_) {
    EXPECT_EQ(testing::read_text(dest_dir() + "/in/ckpt/" + f.rel), testing::read_text(src_dir() + "/ckpt/" + f.rel))
        << f.rel;
  }
  EXPECT_TRUE(testing::exists(dest_dir() + "/in/ckpt/.ferry-complete"));
}

TEST_F(LocalPushTest, LoginRefusedEndsAtOnceWithAMessageNamingBothHosts) {
  write_ssh("echo 'root@198.18.0.6: Permission denied (publickey).' >&2\nexit 255\n");
  auto r = push();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ferry-push error: host 'h2' at 198.18.0.6 refused the ssh login from host 'h1'"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Permission denied (publickey)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("trying again"), std::string::npos) << "a refused login is not retried\n" << r.out;
  EXPECT_FALSE(testing::exists(dest_dir() + "/in/ckpt/.ferry-complete"));
}

TEST_F(LocalPushTest, UnknownHostKeyEndsAtOnceWithAMessageNamingBothHosts) {
  write_ssh(
      "echo 'No ED25519 host key is known for 198.18.0.6 and you have requested strict checking.' >&2\n"
      "echo 'Host key verification failed.' >&2\nexit 255\n");
  auto r = push();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ferry-push error: host 'h1' does not trust the ssh host key of host 'h2' at 198.18.0.6"),
            std::string::npos)
      << r.out;
}

TEST_F(LocalPushTest, DestinationOutOfSpaceEndsWithTheReceiversMessageAndNoMarker) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  // 3 shards of 5 MiB each fit alone, not together in 8 MiB: the space runs out mid-copy.
  if (::mount("tmpfs", dest_dir().c_str(), "tmpfs", 0, "size=8m,mode=0700") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  copytest::Defer unmount{[&] { ::umount2(dest_dir().c_str(), MNT_DETACH); }};
  auto r = push(1);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ferry-push error: on h2: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no space"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("trying again"), std::string::npos) << "a full disk is not retried\n" << r.out;
  EXPECT_FALSE(testing::exists(dest_dir() + "/in/ckpt/.ferry-complete"));
}

}  // namespace
}  // namespace ferry
