// dflash-tiny-data: writes the example's deterministic byte-level corpus.
//   train.bin    training documents, uint16 LE token ids, each ending with EOS (256)
//   heldout.bin  held-out documents (another seed), same format
//   prompts.jsonl  {"text": ...}: a prefix of each held-out document, for ferry-eval
// Nothing is downloaded; the same flags give the same bytes.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/dflash-tiny/corpus.h"

namespace {

const char kUsage[] =
    "usage: dflash-tiny-data --out DIR [--train-docs N] [--heldout-docs N] [--prompts N] [--seed N]\n"
    "  defaults: --train-docs 20000 --heldout-docs 200 --prompts 32 --seed 1\n";

int fail(const std::string& msg) {
  std::fprintf(stderr, "dflash-tiny-data: %s\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ferry::dflash_tiny;
  std::string out;
  long train_docs = 20000, heldout_docs = 200, prompts = 32;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    if (i + 1 >= argc) return fail("missing value after " + a + "\n" + kUsage);
    std::string v = argv[++i];
    if (a == "--out") out = v;
    else if (a == "--train-docs") train_docs = std::atol(v.c_str());
    else if (a == "--heldout-docs") heldout_docs = std::atol(v.c_str());
    else if (a == "--prompts") prompts = std::atol(v.c_str());
    else if (a == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else return fail("unknown flag " + a + "\n" + kUsage);
  }
  if (out.empty()) return fail(std::string("--out is required\n") + kUsage);
  if (train_docs < 1 || heldout_docs < 1 || prompts < 1 || prompts > heldout_docs) return fail("bad counts");
  for (size_t i = 1; i <= out.size(); ++i) {  // mkdir -p
    if (i == out.size() || out[i] == '/') ::mkdir(out.substr(0, i).c_str(), 0755);
  }

  auto build = [](uint64_t s, long n, std::vector<std::string>* docs) {
    std::vector<uint16_t> tokens;
    for (long i = 0; i < n; ++i) {
      std::string d = make_document(s, i);
      for (unsigned char c : d) tokens.push_back(c);
      tokens.push_back(static_cast<uint16_t>(kEosId));
      if (docs) docs->push_back(d);
    }
    return tokens;
  };
  std::vector<std::string> held;
  std::vector<uint16_t> train = build(seed, train_docs, nullptr);
  std::vector<uint16_t> heldout = build(seed + 1000003, heldout_docs, &held);
  auto st = write_tokens(out + "/train.bin", train);
  if (st.ok()) st = write_tokens(out + "/heldout.bin", heldout);
  if (!st.ok()) return fail(st.message());

  std::ofstream pf(out + "/prompts.jsonl", std::ios::trunc);
  for (long i = 0; i < prompts; ++i) {
    const std::string& d = held[static_cast<size_t>(i)];
    size_t len = std::clamp<size_t>(d.size() / 3, 24, 64);
    len = std::min(len, d.size() - 1);
    pf << nlohmann::json{{"text", d.substr(0, len)}}.dump() << "\n";
  }
  if (!pf) return fail(out + "/prompts.jsonl: write failed");
  std::printf("dflash-tiny-data: %s: train %zu tokens (%ld docs), held-out %zu tokens (%ld docs), %ld prompts\n",
              out.c_str(), train.size(), train_docs, heldout.size(), heldout_docs, prompts);
  return 0;
}
