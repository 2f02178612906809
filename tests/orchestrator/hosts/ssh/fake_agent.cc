// A stand-in for ferry-agent used by the bootstrap tests, until the real agent
// exists: `hash-self` prints the XXH3-128 of its own file exactly as the real
// agent does (print_self_hash, file_hash.h), `serve --workdir W` echoes stdin to stdout.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/file_hash.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "hash-self") == 0) return ferry::print_self_hash("fake_agent");
  if (argc >= 2 && std::strcmp(argv[1], "serve") == 0) {
    char buf[65536];
    ssize_t n;
    while ((n = read(0, buf, sizeof(buf))) > 0) {
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(1, buf + off, static_cast<size_t>(n - off));
        if (w <= 0) return 1;
        off += w;
      }
    }
    return 0;
  }
  std::fprintf(stderr, "usage: fake_agent hash-self | serve --workdir DIR\n");
  return 2;
}
