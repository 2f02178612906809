#include "agents/host_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace ferry {
namespace {

int64_t meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream s(line.substr(key.size() + 1));
      int64_t kb = 0;
      s >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

std::vector<protocol::GpuInfo> gpus() {
  std::vector<protocol::GpuInfo> out;
  if (::access("/usr/bin/nvidia-smi", X_OK) != 0 && ::access("/usr/local/bin/nvidia-smi", X_OK) != 0) return out;
  FILE* p = ::popen("nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null", "r");
  if (!p) return out;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::string l = line;
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    size_t comma = l.find(',');
    out.push_back({l.substr(0, comma), comma == std::string::npos ? "" : l.substr(comma + 2)});
  }
  ::pclose(p);
  return out;
}

}  // namespace

protocol::HostInfoReply host_info(const std::string& workdir) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  struct statvfs vfs;
  int64_t disk_free = 0;
  if (::statvfs(workdir.c_str(), &vfs) == 0) disk_free = static_cast<int64_t>(vfs.f_bavail) * vfs.f_frsize;
  const char* conn = std::getenv("SSH_CONNECTION");
  protocol::HostInfoReply info;  // by name: three byte counts side by side
  info.hostname = host;
  info.cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  info.mem_total_bytes = meminfo_bytes("MemTotal");
  info.mem_available_bytes = meminfo_bytes("MemAvailable");
  info.disk_free_bytes = disk_free;
  info.workdir = workdir;
  info.gpus = gpus();
  info.ssh_connection = conn ? conn : "";
  return info;
}

protocol::NetProbeReply probe_tcp(const std::string& address, int port, int timeout_ms) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int gai = ::getaddrinfo(address.c_str(), service.c_str(), &hints, &res);
  if (gai != 0) return {false, elapsed(), gai_strerror(gai)};
  std::string error = "no address";
  bool ok = false;
  for (addrinfo* ai = res; ai && !ok; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (r == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int left = timeout_ms - static_cast<int>(elapsed());
      int pr = left > 0 ? ::poll(&p, 1, left) : 0;
      if (pr == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == 0) ok = true;
        else error = std::strerror(err);
      } else {
        error = "timed out after " + std::to_string(timeout_ms) + " ms";
      }
    } else {
      error = std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return {ok, elapsed(), ok ? "" : error};
}

}  // namespace ferry
