#include "jobs/eval/run/eval_report.h"

#include <iomanip>
#include <sstream>

#include "jobs/eval/run/report_fields.h"

namespace ferry::eval {
namespace {

std::string fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}

// "1 thread", "2 threads".
std::string counted(long long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// Drafted and accepted tokens from the step and slot counts, τ's spread from the
// response values, the CPU contention from its seconds (finish_decode_run's second half).
void finish_counts_and_spread(DecodeRun* run) {
  run->drafted_tokens = run->block_size > 1 ? run->steps * (run->block_size - 1) : 0;
  run->accepted_tokens = 0;
  for (size_t j = 1; j < run->accepted_at.size(); ++j) run->accepted_tokens += run->accepted_at[j];
  run->overall_acceptance_rate =
      run->drafted_tokens > 0 ? static_cast<double>(run->accepted_tokens) / static_cast<double>(run->drafted_tokens)
                              : 0;
  run->tau_spread = tau_spread(run->response_taus);
  run->cpu_contention = run->cpu_capacity_seconds > 0 ? run->contending_cpu_seconds / run->cpu_capacity_seconds : 0;
}

// The counts and τ's spread of a drafter's run, two lines of the text report.
void counts_text(std::ostringstream& out, const DecodeRun& r) {
  const TauSpread& t = r.tau_spread;
  out << "  drafted " << r.drafted_tokens << " tokens, accepted " << r.accepted_tokens << ", acceptance rate "
      << fixed(r.overall_acceptance_rate, 3) << "\n";
  out << "  tau across responses: sd " << fixed(t.sd, 3) << ", p10 " << fixed(t.p10, 3) << ", p50 " << fixed(t.p50, 3)
      << ", p90 " << fixed(t.p90, 3) << ", 95% bootstrap interval " << fixed(t.ci95_low, 3) << "-"
      << fixed(t.ci95_high, 3) << "\n";
}

void run_text(std::ostringstream& out, const DecodeRun& r, const Sampling& sampling) {
  out << r.label << (r.path.empty() ? "" : " (" + r.path + ")") << ", block " << r.block_size << ":\n";
  out << "  tau " << fixed(r.tau, 3) << " over " << r.responses << " responses, " << r.steps << " steps, "
      << r.generated_tokens << " tokens\n";
  out << "  target forwards " << r.target_forwards << ", draft forwards " << r.draft_forwards << "\n";
  out << "  decode " << fixed(r.decode_seconds, 3) << " s (target " << fixed(r.target_seconds, 3) << " s, draft "
      << fixed(r.draft_seconds, 3) << " s, loop overhead " << fixed(r.overhead_seconds, 3) << " s), prefill "
      << fixed(r.prefill_seconds, 3) << " s, " << fixed(r.tokens_per_second, 1) << " tokens/s\n";
  if (r.block_size > 1) {
    counts_text(out, r);
    out << "  acceptance length histogram:";
    for (size_t i = 1; i < r.acceptance_histogram.size(); ++i) out << " " << i << ":" << r.acceptance_histogram[i];
    out << "\n  acceptance rate by block position:";
    for (size_t j = 1; j < r.acceptance_rate.size(); ++j) out << " " << j << ":" << fixed(r.acceptance_rate[j], 2);
    out << "\n";
  }
  if (r.responses_differing_from_baseline > 0) {
    out << "  WARNING: " << r.responses_differing_from_baseline
        << (sampling.greedy() ? " responses differ from plain greedy decoding (numerical near-ties?)\n"
                              : " responses differ from plain decoding with the same samples (numerical "
                                "near-ties?)\n");
  }
}

// Where the reference and baseline runs came from, when a store was asked for.
void shared_runs_text(std::ostringstream& out, const EvalReport& r) {
  if (r.baseline_key.empty()) return;
  if (r.baseline_reused) {
    out << "reference and baseline: reused, as the eval of " << r.baseline_computed_by << " decoded them (key "
        << r.baseline_key << "); the speedup is against that stored baseline's timing\n";
  } else {
    out << "reference and baseline: decoded here and stored for later evals (key " << r.baseline_key << ")\n";
  }
  out << "target forwards run by this eval: " << r.target_forwards_run << "\n\n";
}

// What the eval read, by content (InputFingerprint): the lines that tell two evals of
// the same paths apart, or show two runs read the same checkpoint.
void inputs_text(std::ostringstream& out, const EvalReport& r) {
  for (const auto& f : r.fingerprints) {
    out << "  input    " << f.what << " " << f.digest
        << (f.copy_manifest.empty() ? "" : " (copied by ferry: manifest " + f.copy_manifest + ")") << "\n";
  }
}

// metrics()' counts, τ spread and regime: drafted_tokens, accepted_tokens, acceptance_rate, tau_sd, ...
void add_count_metrics(const EvalReport& r, std::map<std::string, double>* m) {
  const DecodeRun& candidate = r.candidate;
  const TauSpread& t = candidate.tau_spread;
  (*m)["drafted_tokens"] = static_cast<double>(candidate.drafted_tokens);
  (*m)["accepted_tokens"] = static_cast<double>(candidate.accepted_tokens);
  (*m)["acceptance_rate"] = candidate.overall_acceptance_rate;
  for (auto [key, value] : {std::pair{"tau_sd", t.sd},
                            {"tau_p10", t.p10},
                            {"tau_p50", t.p50},
                            {"tau_p90", t.p90},
                            {"tau_ci95_low", t.ci95_low},
                            {"tau_ci95_high", t.ci95_high}}) {
    (*m)[key] = value;
  }
  if (r.reference_run) (*m)["reference_acceptance_rate"] = r.reference_run->overall_acceptance_rate;
  if (!r.sampling.greedy()) (*m)["temperature"] = r.sampling.temperature;
}

// metrics()' per dataset: tau.NAME, acceptance_rate.NAME, and speedup.NAME and
// ratio_to_reference.NAME where measured, so a watch's CSV and chart have the paper's
// table as columns (dataset names are [A-Za-z0-9_.-], metric names too).
void add_dataset_metrics(const EvalReport& r, std::map<std::string, double>* m) {
  for (const DatasetRow& d : r.datasets) {
    (*m)["tau." + d.name] = d.tau;
    (*m)["acceptance_rate." + d.name] = d.acceptance_rate;
    if (r.baseline) (*m)["speedup." + d.name] = d.speedup;
    if (d.ratio_to_reference) (*m)["ratio_to_reference." + d.name] = *d.ratio_to_reference;
  }
}

}  // namespace

void finish_decode_run(DecodeRun* run) {
  double tau_sum = 0;
  for (double t : run->response_taus) tau_sum += t;  // in prompt order, as the runner adds them
  run->tau = run->responses > 0 ? tau_sum / static_cast<double>(run->responses) : 0;
  run->acceptance_rate.assign(run->accepted_at.size(), 0);
  if (!run->acceptance_rate.empty()) run->acceptance_rate[0] = 1.0;
  for (size_t j = 1; j < run->accepted_at.size(); ++j) {
    run->acceptance_rate[j] =
        run->steps > 0 ? static_cast<double>(run->accepted_at[j]) / static_cast<double>(run->steps) : 0;
  }
  run->overhead_seconds = run->decode_seconds - run->target_seconds - run->draft_seconds;
  run->tokens_per_second =
      run->decode_seconds > 0 ? static_cast<double>(run->generated_tokens) / run->decode_seconds : 0;
  run->mean_tpot = run->tpot_count > 0 ? run->tpot_sum / static_cast<double>(run->tpot_count) : 0;
  finish_counts_and_spread(run);
}

nlohmann::json eval_result_json(const EvalReport& report) {
  return {{"ok", true},
          {"report", report.to_json()},
          {"text", report.to_text()},
          {"metrics", report.metrics()},
          {"gate_passed", report.gate_passed},
          {"gate_message", report.gate_message}};
}

void compare_runs(EvalReport* report) {
  if (report->baseline && report->candidate.mean_tpot > 0) {
    report->speedup = report->baseline->mean_tpot / report->candidate.mean_tpot;
  }
  if (report->reference_run) {
    if (report->reference_run->tau > 0) report->ratio_to_reference = report->candidate.tau / report->reference_run->tau;
    if (report->baseline && report->reference_run->mean_tpot > 0) {
      report->reference_speedup = report->baseline->mean_tpot / report->reference_run->mean_tpot;
    }
  }
}

ShardOf ShardOf::slice(int index, int count, int64_t total) {
  ShardOf s;
  s.index = index;
  s.count = count;
  s.prompt_total = total;
  s.first_prompt = total * index / count;
  return s;
}

nlohmann::json DecodeRun::to_json() const { return fields_json(*this, decode_run_fields); }

nlohmann::json EvalReport::to_json() const {
  nlohmann::json j = fields_json(*this, eval_report_fields);
  j["metrics"] = metrics();
  return j;
}

std::string EvalReport::to_text() const {
  std::ostringstream out;
  out << "DFlash drafter eval\n";
  out << "  target   " << target << (target_architecture.empty() ? "" : " (" + target_architecture + ")")
      << "\n  drafter  " << drafter << "\n";
  if (!reference.empty()) out << "  reference " << reference << "\n";
  out << "  prompts  " << prompts << " (" << prompt_count << "), max_new_tokens " << max_new_tokens << ", block "
      << block_size << "\n";
  if (shard.count > 1) {
    out << "  shard    " << shard.index + 1 << " of " << shard.count << ": prompts " << shard.first_prompt + 1 << "-"
        << shard.first_prompt + prompt_count << " of " << shard.prompt_total << "\n";
  }
  for (const auto& r : shards) {
    out << "  shard    " << (r.stage.empty() ? "?" : r.stage) << (r.host.empty() ? "" : " on " + r.host) << ": prompts "
        << r.first_prompt + 1 << "-" << r.first_prompt + r.prompts << ", " << fixed(r.wall_seconds, 1) << " s, "
        << counted(r.threads, "thread") << " of " << counted(r.cores, "core") << "\n";
  }
  out << "  runtime  " << device << " " << dtype << " (" << dtype_source << "), " << counted(threads, "thread")
      << " of " << counted(cores, "core") << ", " << isa << "\n";
  out << "  BLAS     " << blas << (blas_threading.empty() ? "" : ", " + blas_threading) << " (" << blas_library << ")"
      << (blas_reference ? " -- SLOW, see warning" : "") << "\n";
  out << "  decoding " << sampling.regime()
      << (sampling.greedy() ? "" : " (the target's tokens sampled, the drafters' greedy)") << "\n";
  out << "  format   " << prompt_format << ", tokenizer " << (tokenizer.empty() ? "none (bytes)" : tokenizer) << "\n";
  for (const auto& l : loads) {
    out << "  loaded " << l.what << ": " << l.tensors_loaded << " tensors (";
    for (size_t i = 0; i < l.source_dtypes.size(); ++i) out << (i ? "," : "") << l.source_dtypes[i];
    out << (l.sharded ? ", sharded" : "") << "), " << l.unused.size() << " unused";
    if (l.tensors_repacked > 0) out << ", " << l.tensors_repacked << " repacked for the BF16 kernel";
    if (l.skipped_total() > 0) out << ", " << l.skipped_total() << " vision/mtp skipped unread";
    out << "; " << fixed(static_cast<double>(l.bytes_mapped) / (1 << 20), 1) << " MiB mapped, "
        << fixed(static_cast<double>(l.bytes_copied) / (1 << 20), 1) << " MiB copied\n";
    for (const auto& u : l.unused) out << "    unused: " << u << "\n";
  }
  inputs_text(out, *this);
  out << "\nTAU " << fixed(candidate.tau, 3);
  if (reference_run) out << "   reference " << fixed(reference_run->tau, 3);
  if (ratio_to_reference) out << "   ratio " << fixed(*ratio_to_reference, 3);
  if (baseline) out << "   speedup " << fixed(speedup, 2) << "x";
  out << "\n\n" << datasets_text(*this) << (datasets.empty() ? "" : "\n");
  shared_runs_text(out, *this);
  run_text(out, candidate, sampling);
  if (reference_run) run_text(out, *reference_run, sampling);
  if (baseline) run_text(out, *baseline, sampling);
  if (diff) out << "\n" << diff->to_text();
  if (show_responses > 0 && !responses.empty()) out << "\n" << render_responses(responses, show_responses);
  for (const auto& w : warnings) out << "warning: " << w << "\n";
  if (!gate_deferred.empty()) {
    out << "\ngate: " << gate_deferred << "\n";
  } else {
    out << "\ngate: " << (gate_passed ? "PASSED" : "FAILED") << (gate_message.empty() ? "" : " (" + gate_message + ")")
        << "\n";
  }
  return out.str();
}

std::map<std::string, double> EvalReport::metrics() const {
  std::map<std::string, double> m;
  m["tau"] = candidate.tau;
  m["block_size"] = static_cast<double>(block_size);
  m["steps"] = static_cast<double>(candidate.steps);
  m["target_forwards"] = static_cast<double>(candidate.target_forwards);
  m["generated_tokens"] = static_cast<double>(candidate.generated_tokens);
  m["tokens_per_second"] = candidate.tokens_per_second;
  m["decode_seconds"] = candidate.decode_seconds;
  m["loop_overhead_seconds"] = candidate.overhead_seconds;
  add_count_metrics(*this, &m);
  add_dataset_metrics(*this, &m);
  if (gate_deferred.empty()) m["gate_passed"] = gate_passed ? 1.0 : 0.0;  // else judged elsewhere
  for (size_t j = 1; j < candidate.acceptance_rate.size(); ++j) {
    m["acceptance_rate_" + std::to_string(j)] = candidate.acceptance_rate[j];
  }
  if (baseline) {
    m["speedup"] = speedup;
    m["baseline_tokens_per_second"] = baseline->tokens_per_second;
  }
  if (reference_run) {
    m["reference_tau"] = reference_run->tau;
    if (baseline) m["reference_speedup"] = reference_speedup;
  }
  if (ratio_to_reference) m["ratio_to_reference"] = *ratio_to_reference;
  if (!baseline_key.empty()) m["baseline_reused"] = baseline_reused ? 1.0 : 0.0;
  return m;
}

}  // namespace ferry::eval
