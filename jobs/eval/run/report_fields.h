// The JSON field lists of an eval report's types: `fields(v, x)` visits each field of
// `x` with its key, and the same list writes the JSON (JsonFieldWriter, in to_json) and
// reads it back typed (JsonFields, in eval_report_from_json), so a key is named once.
// What one side alone does is marked kReads: fields written only when they say
// something, counts and spans derived from what the other side keeps. Header-only;
// any thread.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "base/json_field_writer.h"
#include "jobs/eval/io/load_report.h"
#include "jobs/eval/run/drafter_diff.h"
#include "jobs/eval/run/eval_report.h"
#include "jobs/eval/run/response_text.h"
#include "jobs/eval/run/tau_spread.h"

namespace ferry::eval {

inline constexpr auto tau_spread_fields = [](auto& v, auto& t) {
  v("sd", t.sd);
  v("p10", t.p10);
  v("p50", t.p50);
  v("p90", t.p90);
  v("ci95_low", t.ci95_low);
  v("ci95_high", t.ci95_high);
  if constexpr (!kReads<decltype(v)>) v("method", std::string(kTauSpreadMethod));
};

inline constexpr auto decode_run_fields = [](auto& v, auto& run) {
  v("label", run.label);
  v("path", run.path);
  v("block_size", run.block_size);
  v("responses", run.responses);
  v("tau", run.tau);
  v("response_taus", run.response_taus);
  if (kReads<decltype(v)> || !run.response_tpots.empty()) v("response_tpots", run.response_tpots);
  v("acceptance_histogram", run.acceptance_histogram);
  v("acceptance_rate", run.acceptance_rate);
  v("accepted_at", run.accepted_at);
  v("steps", run.steps);
  v("target_forwards", run.target_forwards);
  v("draft_forwards", run.draft_forwards);
  v("generated_tokens", run.generated_tokens);
  v("prefill_seconds", run.prefill_seconds);
  v("decode_seconds", run.decode_seconds);
  v("target_seconds", run.target_seconds);
  v("draft_seconds", run.draft_seconds);
  v("overhead_seconds", run.overhead_seconds);
  v("tokens_per_second", run.tokens_per_second);
  v("mean_tpot", run.mean_tpot);
  v("tpot_sum", run.tpot_sum);
  v("tpot_count", run.tpot_count);
  v("responses_differing_from_baseline", run.responses_differing_from_baseline);
  // Derived from the counts and response_taus above (finish_decode_run); read back as written.
  v("drafted_tokens", run.drafted_tokens);
  v("accepted_tokens", run.accepted_tokens);
  v("overall_acceptance_rate", run.overall_acceptance_rate);
  v.object("tau_spread", run.tau_spread, tau_spread_fields);
  v("cpu_seconds", run.cpu_seconds);
  v("cpu_capacity_seconds", run.cpu_capacity_seconds);
  v("contending_cpu_seconds", run.contending_cpu_seconds);
  v("cpu_contention", run.cpu_contention);
};

inline constexpr auto load_report_fields = [](auto& v, auto& l) {
  v("what", l.what);
  v("location", l.location);
  v("sharded", l.sharded);
  v("files_opened", l.files_opened);
  v("tensors_loaded", l.tensors_loaded);
  v("tensors_zero_copy", l.tensors_zero_copy);
  v("tensors_repacked", l.tensors_repacked);
  v("bytes_mapped", l.bytes_mapped);
  v("bytes_copied", l.bytes_copied);
  v("source_dtypes", l.source_dtypes);
  v("unused", l.unused);
  // The JSON keeps how many were skipped, not their names.
  if constexpr (kReads<decltype(v)>) {
    v("skipped_unread", l.skipped_count);
  } else {
    v("skipped_unread", l.skipped_total());
  }
};

inline constexpr auto drafter_diff_fields = [](auto& v, auto& d) {
  v.objects("fields", d.fields, [](auto& f, auto& x) {
    f("name", x.name);
    f("candidate", x.candidate);
    f("reference", x.reference);
    f("differs", x.differs);
  });
  v.objects("tensors", d.tensors, [](auto& t, auto& x) {
    t("name", x.name);
    t("issue", x.issue);
    t("candidate", x.candidate);
    t("reference", x.reference);
    if (kReads<decltype(t)> || x.relative_distance >= 0) {  // written only where comparable
      t("candidate_norm", x.candidate_norm);
      t("reference_norm", x.reference_norm);
      t("relative_distance", x.relative_distance);
    }
  });
  v("tensors_compared", d.tensors_compared);
  v("tensors_identical", d.tensors_identical);
};

inline constexpr auto response_text_fields = [](auto& v, auto& x) {
  v("line", x.line);
  v("prompt_ids", x.prompt_ids);
  v("ids", x.ids);
  v("text", x.text);
  v("marked_text", x.marked_text);  // the report page marks the spans from it
  v("tau", x.tau);
  v("acceptance_lengths", x.acceptance_lengths);
  // matches_baseline: true / false, or null when no baseline ran (-1).
  if constexpr (kReads<decltype(v)>) {
    std::optional<bool> matches;
    v("matches_baseline", matches);
    x.matches_baseline = matches ? (*matches ? 1 : 0) : -1;
    x.drafted = drafted_tokens(x.acceptance_lengths, x.ids.size());
  } else {
    v("matches_baseline", x.matches_baseline < 0 ? nlohmann::json() : nlohmann::json(x.matches_baseline == 1));
    v("drafted_spans", drafted_spans(x.drafted));
  }
};

inline constexpr auto shard_of_fields = [](auto& v, auto& s) {
  v("index", s.index);
  v("count", s.count);
  v("first_prompt", s.first_prompt);
  v("prompt_total", s.prompt_total);
};

inline constexpr auto shard_row_fields = [](auto& v, auto& r) {
  v("stage", r.stage);
  if (kReads<decltype(v)> || !r.host.empty()) v("host", r.host);
  v("first_prompt", r.first_prompt);
  v("prompts", r.prompts);
  v("wall_seconds", r.wall_seconds);
  v("threads", r.threads);
  v("cores", r.cores);
};

inline constexpr auto input_fingerprint_fields = [](auto& v, auto& f) {
  v("what", f.what);
  v("digest", f.digest);
  if (kReads<decltype(v)> || !f.copy_manifest.empty()) v("copy_manifest", f.copy_manifest);
};

inline constexpr auto dataset_row_fields = [](auto& v, auto& d) {
  v("name", d.name);
  v("file", d.file);
  v("first_prompt", d.first_prompt);
  v("prompts", d.prompts);
  v("prompt_total", d.prompt_total);
  v("first_in_file", d.first_in_file);
  v("tau", d.tau);
  v("reference_tau", d.reference_tau);
  v("ratio_to_reference", d.ratio_to_reference);
  v("speedup", d.speedup);
  v("drafted_tokens", d.drafted_tokens);
  v("accepted_tokens", d.accepted_tokens);
  v("acceptance_rate", d.acceptance_rate);
};

// Without metrics(): written for the reader's convenience, never read back.
inline constexpr auto eval_report_fields = [](auto& v, auto& r) {
  constexpr bool reads = kReads<decltype(v)>;
  if (reads || !r.host.empty()) v("host", r.host);
  v("target", r.target);
  v("target_architecture", r.target_architecture);
  v("drafter", r.drafter);
  v("reference", r.reference);
  v("prompts", r.prompts);
  v("prompt_count", r.prompt_count);
  if (reads || r.shard.count > 1) v.object("shard", r.shard, shard_of_fields);
  if (reads || !r.shards.empty()) v.objects("shards", r.shards, shard_row_fields);
  if (reads || !r.datasets.empty()) v.objects("datasets", r.datasets, dataset_row_fields);
  v("prompt_format", r.prompt_format);
  v("tokenizer", r.tokenizer);
  v("max_new_tokens", r.max_new_tokens);
  v("block_size", r.block_size);
  v("device", r.device);
  v("dtype", r.dtype);
  v("dtype_source", r.dtype_source);
  v("threads", r.threads);
  v.object("runtime", [&](auto& rt) {
    rt("cores", r.cores);
    rt("blas", r.blas);
    rt("blas_library", r.blas_library);
    rt("blas_threading", r.blas_threading);
    rt("blas_reference", r.blas_reference);
    rt("isa", r.isa);
  });
  // temperature and seed only when sampled; "sampling" always names the regime ("greedy", "T = 1.0, seed 7").
  if (reads || !r.sampling.greedy()) {
    v("temperature", r.sampling.temperature);
    v("seed", r.sampling.seed);
  }
  if constexpr (!reads) v("sampling", r.sampling.regime());
  v.objects("loads", r.loads, load_report_fields);
  v.objects("fingerprints", r.fingerprints, input_fingerprint_fields);
  v.object("candidate", r.candidate, decode_run_fields);
  v.object("reference_run", r.reference_run, decode_run_fields);
  v.object("baseline", r.baseline, decode_run_fields);
  if (reads || r.baseline) v("speedup", r.speedup);  // none without a baseline: not 0
  if (reads || r.reference_run) v("reference_speedup", r.reference_speedup);
  v("ratio_to_reference", r.ratio_to_reference);
  v.object("diff", r.diff, drafter_diff_fields);
  v("warnings", r.warnings);
  v("wall_seconds", r.wall_seconds);
  v("target_forwards_run", r.target_forwards_run);
  if (reads || !r.baseline_key.empty()) {
    v("baseline_key", r.baseline_key);
    v("baseline_reused", r.baseline_reused);
    v("baseline_computed_by", r.baseline_computed_by);
  }
  v("gate_passed", r.gate_passed);
  v("gate_message", r.gate_message);
  if (reads || !r.gate_deferred.empty()) v("gate_deferred", r.gate_deferred);
  v.objects("responses", r.responses, response_text_fields);
};

}  // namespace ferry::eval
