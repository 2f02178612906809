#include "jobs/eval/run/shard_merge.h"

#include <algorithm>

#include "base/json_fields.h"
#include "jobs/eval/run/dataset_shards.h"
#include "jobs/eval/run/eval_gate.h"

namespace ferry::eval {
namespace {

std::string shard_name(size_t i, size_t n) { return "shard " + std::to_string(i + 1) + " of " + std::to_string(n); }

// *sum += x for a count read from a host: false when x is negative or the sum overflows.
bool add_count(int64_t* sum, int64_t x) { return x >= 0 && !__builtin_add_overflow(*sum, x, sum); }

// The counts of one decoding configuration over every shard, in prompt order.
Result<DecodeRun> merge_runs(const std::vector<const DecodeRun*>& parts, const std::string& what) {
  DecodeRun out;
  out.label = parts[0]->label;
  out.path = parts[0]->path;
  out.block_size = parts[0]->block_size;
  out.acceptance_histogram.assign(parts[0]->acceptance_histogram.size(), 0);
  out.accepted_at.assign(parts[0]->accepted_at.size(), 0);
  out.responses_differing_from_baseline = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const DecodeRun& p = *parts[i];
    const std::string at = what + " of " + shard_name(i, parts.size());
    if (p.block_size != out.block_size || p.acceptance_histogram.size() != out.acceptance_histogram.size()) {
      return invalid_argument(at + " decoded with block " + std::to_string(p.block_size) + ", shard 1 with " +
                              std::to_string(out.block_size));
    }
    if (p.accepted_at.size() != static_cast<size_t>(p.block_size)) {
      return invalid_argument(at + " has no accepted-slot counts (a ferry-eval older than sharded evals wrote it)");
    }
    if (p.response_taus.size() != static_cast<size_t>(p.responses)) {
      return invalid_argument(at + " has " + std::to_string(p.response_taus.size()) + " response taus for " +
                              std::to_string(p.responses) + " responses");
    }
    bool counts_ok = add_count(&out.responses, p.responses) && add_count(&out.steps, p.steps) &&
                     add_count(&out.target_forwards, p.target_forwards) &&
                     add_count(&out.draft_forwards, p.draft_forwards) &&
                     add_count(&out.generated_tokens, p.generated_tokens) && add_count(&out.tpot_count, p.tpot_count);
    for (size_t k = 0; k < out.acceptance_histogram.size(); ++k) {
      counts_ok = counts_ok && add_count(&out.acceptance_histogram[k], p.acceptance_histogram[k]);
    }
    for (size_t k = 0; k < out.accepted_at.size(); ++k)
      counts_ok = counts_ok && add_count(&out.accepted_at[k], p.accepted_at[k]);
    if (!counts_ok) return invalid_argument(at + " has a count below zero or past 2^63");
    out.response_taus.insert(out.response_taus.end(), p.response_taus.begin(), p.response_taus.end());
    out.response_tpots.insert(out.response_tpots.end(), p.response_tpots.begin(), p.response_tpots.end());
    out.prefill_seconds += p.prefill_seconds;
    out.decode_seconds += p.decode_seconds;
    out.target_seconds += p.target_seconds;
    out.draft_seconds += p.draft_seconds;
    out.tpot_sum += p.tpot_sum;
    out.cpu_seconds += p.cpu_seconds;  // the contention over all shards' passes: finish_decode_run
    out.cpu_capacity_seconds += p.cpu_capacity_seconds;
    out.contending_cpu_seconds += p.contending_cpu_seconds;
    if (out.responses_differing_from_baseline < 0 ||
        !add_count(&out.responses_differing_from_baseline, p.responses_differing_from_baseline)) {
      out.responses_differing_from_baseline = -1;  // no baseline ran (or a count that is no count)
    }
  }
  finish_decode_run(&out);
  return out;
}

// Shard i of one prompts file is its i-th contiguous part.
Status check_contiguous_part(const EvalReport& s, const EvalReport& first, size_t i, size_t n) {
  const std::string at = shard_name(i, n);
  const ShardOf want = ShardOf::slice(static_cast<int>(i), static_cast<int>(n), first.shard.prompt_total);
  const int64_t want_count =
      ShardOf::slice(static_cast<int>(i) + 1, static_cast<int>(n), first.shard.prompt_total).first_prompt -
      want.first_prompt;
  if (s.shard.prompt_total != first.shard.prompt_total || s.shard.first_prompt != want.first_prompt ||
      s.prompt_count != want_count || s.candidate.responses != want_count) {
    return invalid_argument(at + " decoded prompts from " + std::to_string(s.shard.first_prompt + 1) + ", " +
                            std::to_string(s.candidate.responses) + " of them, of a set of " +
                            std::to_string(s.shard.prompt_total) + "; its part is " + std::to_string(want_count) +
                            " from " + std::to_string(want.first_prompt + 1) + " of " +
                            std::to_string(first.shard.prompt_total));
  }
  return Status();
}

// Shard i is the i-th part of the same prompts, decoded the same way as shard 0.
Status check_part(const EvalReport& s, const EvalReport& first, size_t i, size_t n) {
  const std::string at = shard_name(i, n);
  if (s.shard.count != static_cast<int>(n) || s.shard.index != static_cast<int>(i)) {
    return invalid_argument(at + " reports itself as shard " + std::to_string(int64_t{s.shard.index} + 1) + " of " +
                            std::to_string(s.shard.count));
  }
  if (s.shard.prompt_total < 0 || s.shard.prompt_total > static_cast<int64_t>(kMaxJsonItems)) {
    return invalid_argument(at + " reports a prompt set of " + std::to_string(s.shard.prompt_total) + " prompts");
  }
  FERRY_RETURN_IF_ERROR(first.datasets.empty() && s.datasets.empty() ? check_contiguous_part(s, first, i, n)
                                                                     : check_dataset_part(s, first, i, n));
  for (auto [name, mine, theirs] : {std::tuple{"drafter", &s.drafter, &first.drafter},
                                    {"target", &s.target, &first.target},
                                    {"reference", &s.reference, &first.reference},
                                    {"prompts", &s.prompts, &first.prompts}}) {
    if (*mine != *theirs) {
      return invalid_argument(at + " evaluated " + name + " '" + *mine + "', shard 1 '" + *theirs + "'");
    }
  }
  if (s.max_new_tokens != first.max_new_tokens || s.block_size != first.block_size ||
      s.reference_run.has_value() != first.reference_run.has_value() ||
      s.baseline.has_value() != first.baseline.has_value()) {
    return invalid_argument(at +
                            " decoded differently from shard 1 (max_new_tokens, block size, reference or baseline)");
  }
  if (s.sampling.temperature != first.sampling.temperature || s.sampling.seed != first.sampling.seed) {
    return invalid_argument(at + " decoded " + s.sampling.regime() + ", shard 1 " + first.sampling.regime());
  }
  return Status();
}

// " (split-shard-2-of-3 on host c)": where shard i ran, as far as known; "" when not.
std::string where_ran(const EvalReport& s, size_t i, const std::vector<std::string>& stages) {
  std::string where = i < stages.size() ? stages[i] : "";
  if (!s.host.empty()) where += (where.empty() ? "on host " : " on host ") + s.host;
  return where.empty() ? "" : " (" + where + ")";
}

// The path a report names for one of its fingerprinted inputs (InputFingerprint::what).
std::string path_of(const EvalReport& r, const std::string& what) {
  if (what == "target") return r.target;
  if (what == "drafter") return r.drafter;
  if (what == "reference") return r.reference;
  if (what == "tokenizer") return r.tokenizer;
  if (what == "prompts") return r.prompts;
  for (const auto& d : r.datasets) {
    if (what == "dataset " + d.name) return d.file;
  }
  return "";
}

const InputFingerprint* find_fingerprint(const EvalReport& r, const std::string& what) {
  for (const auto& f : r.fingerprints) {
    if (f.what == what) return &f;
  }
  return nullptr;
}

// Shard i read the same files as shard 1, by content (InputFingerprint): check_part
// compared the paths, and one path may hold other files on another host (last week's
// drafter where this week's was not copied). A report without fingerprints (a
// ferry-eval older than them) is refused: the merge promises the report of one eval,
// and it cannot tell that such a shard evaluated the same checkpoints.
Status check_same_files(const EvalReport& s, const EvalReport& first, size_t i, size_t n,
                        const std::vector<std::string>& stages) {
  const std::string at = shard_name(i, n) + where_ran(s, i, stages);
  if (s.fingerprints.empty()) {
    return invalid_argument(
        at + " carries no content fingerprints of its models and prompts: a ferry-eval older than this ferry " +
        "wrote its report (one installed on the host through FERRY_EVAL_WORKER, or one that ran before ferry was " +
        "updated), so the merge cannot tell that it loaded the same files as the other shards; update that worker " +
        "and run the eval again");
  }
  const std::string other = "shard 1" + where_ran(first, 0, stages);
  for (const auto& mine : s.fingerprints) {
    const std::string what = mine.what == "prompts" ? "prompts file" : mine.what;
    const InputFingerprint* theirs = find_fingerprint(first, mine.what);
    if (theirs == nullptr) return invalid_argument(at + " read a " + what + " that " + other + " did not");
    // A copy manifest covers every byte, but only a folder ferry copied to both hosts has one.
    const bool copied_apart =
        !mine.copy_manifest.empty() && !theirs->copy_manifest.empty() && mine.copy_manifest != theirs->copy_manifest;
    const bool differ = mine.digest != theirs->digest;
    if (!differ && !copied_apart) continue;
    const std::string why =
        differ ? "the files differ (content fingerprint " + mine.digest + " against " + theirs->digest + ")"
               : "ferry copied different files there (copy manifest " + mine.copy_manifest + " against " +
                     theirs->copy_manifest + " in .ferry-complete; a folder changed by hand after the copy keeps " +
                     "its old marker: copy it again, or remove the stale marker)";
    return invalid_argument(at + " loaded another " + what + " than " + other + " under the same path '" +
                            path_of(s, mine.what) + "': " + why + "; put the same " + what +
                            " on every host of the eval");
  }
  for (const auto& theirs : first.fingerprints) {
    if (find_fingerprint(s, theirs.what) == nullptr) {
      return invalid_argument(at + " has no fingerprint of the " + theirs.what + " " + other + " read");
    }
  }
  return Status();
}

// Forwards run add up; the reference and baseline count as reused only when every
// shard took its part from a store (each shard's part has a key of its own).
void merge_shared_runs_facts(const std::vector<EvalReport>& shards, EvalReport* m) {
  m->target_forwards_run = 0;
  for (const auto& s : shards) {
    m->target_forwards_run += s.target_forwards_run;
    m->baseline_reused = m->baseline_reused && s.baseline_reused;
  }
}

}  // namespace

Result<EvalReport> merge_shard_reports(const std::vector<EvalReport>& shards, const std::vector<std::string>& stages,
                                       std::optional<double> min_tau, std::optional<double> min_ratio_to_reference) {
  if (shards.empty()) return invalid_argument("no shard reports to merge");
  const EvalReport& first = shards[0];
  for (size_t i = 0; i < shards.size(); ++i) {
    FERRY_RETURN_IF_ERROR(check_part(shards[i], first, i, shards.size()));
    FERRY_RETURN_IF_ERROR(check_same_files(shards[i], first, i, shards.size(), stages));
  }

  // What describes the eval as a whole comes from shard 1 (the same checkpoints everywhere).
  EvalReport m = first;
  m.host.clear();  // each shard's is in its row
  m.shard = ShardOf{};
  m.prompt_count = first.shard.prompt_total;
  m.responses.clear();
  m.warnings.clear();
  m.wall_seconds = 0;
  m.show_responses = 3;
  std::vector<const DecodeRun*> cand, ref, base;
  for (size_t i = 0; i < shards.size(); ++i) {
    const EvalReport& s = shards[i];
    cand.push_back(&s.candidate);
    if (s.reference_run) ref.push_back(&*s.reference_run);
    if (s.baseline) base.push_back(&*s.baseline);
    m.responses.insert(m.responses.end(), s.responses.begin(), s.responses.end());
    for (const auto& w : s.warnings) {
      if (std::find(m.warnings.begin(), m.warnings.end(), w) == m.warnings.end()) m.warnings.push_back(w);
    }
    m.wall_seconds = std::max(m.wall_seconds, s.wall_seconds);  // side by side: the slowest shard
    m.shards.push_back({i < stages.size() ? stages[i] : "", s.host, s.shard.first_prompt, s.prompt_count,
                        s.wall_seconds, s.threads, s.cores});
  }
  merge_shared_runs_facts(shards, &m);
  auto c = merge_runs(cand, "the candidate");
  if (!c.ok()) return c.status();
  m.candidate = std::move(*c);
  if (first.reference_run) {
    auto r = merge_runs(ref, "the reference");
    if (!r.ok()) return r.status();
    m.reference_run = std::move(*r);
  }
  if (first.baseline) {
    auto b = merge_runs(base, "the baseline");
    if (!b.ok()) return b.status();
    m.baseline = std::move(*b);
  }
  m.speedup = 0;
  m.reference_speedup = 0;
  m.ratio_to_reference.reset();
  // Named datasets: each shard decoded a part of every one; back in the whole's order.
  if (!first.datasets.empty()) FERRY_RETURN_IF_ERROR(order_rows_by_dataset(shards, &m));
  compare_runs(&m);
  finish_datasets(&m);
  judge_gate(min_tau, min_ratio_to_reference, &m);
  return m;
}

}  // namespace ferry::eval
