#include "jobs/eval/run/eval_report_json.h"

#include <algorithm>
#include <optional>

#include "base/peer_json.h"
#include "jobs/eval/run/json_fields.h"

namespace ferry::eval {
namespace {

void read_run(JsonFields& r, DecodeRun* run) {
  r.str("label", &run->label);
  r.str("path", &run->path);
  r.integer("block_size", &run->block_size);
  r.integer("responses", &run->responses);
  r.num("tau", &run->tau);
  r.list("response_taus", &run->response_taus);
  r.list("acceptance_histogram", &run->acceptance_histogram);
  r.list("acceptance_rate", &run->acceptance_rate);
  r.list("accepted_at", &run->accepted_at);
  r.integer("steps", &run->steps);
  r.integer("target_forwards", &run->target_forwards);
  r.integer("draft_forwards", &run->draft_forwards);
  r.integer("generated_tokens", &run->generated_tokens);
  r.num("prefill_seconds", &run->prefill_seconds);
  r.num("decode_seconds", &run->decode_seconds);
  r.num("target_seconds", &run->target_seconds);
  r.num("draft_seconds", &run->draft_seconds);
  r.num("overhead_seconds", &run->overhead_seconds);
  r.num("tokens_per_second", &run->tokens_per_second);
  r.num("mean_tpot", &run->mean_tpot);
  r.num("tpot_sum", &run->tpot_sum);
  r.integer("tpot_count", &run->tpot_count);
  r.integer("responses_differing_from_baseline", &run->responses_differing_from_baseline);
}

void read_load(JsonFields& r, LoadReport* l) {
  r.str("what", &l->what);
  r.str("location", &l->location);
  r.boolean("sharded", &l->sharded);
  r.list("files_opened", &l->files_opened);
  r.integer("tensors_loaded", &l->tensors_loaded);
  r.integer("tensors_zero_copy", &l->tensors_zero_copy);
  r.integer("tensors_repacked", &l->tensors_repacked);
  r.integer("bytes_mapped", &l->bytes_mapped);
  r.integer("bytes_copied", &l->bytes_copied);
  r.list("source_dtypes", &l->source_dtypes);
  r.list("unused", &l->unused);
  r.integer("skipped_unread", &l->skipped_count);  // the JSON keeps how many, not their names
}

void read_diff(JsonFields& r, DrafterDiff* d) {
  r.objects("fields", [&](JsonFields& f) {
    DrafterDiff::Field x;
    f.str("name", &x.name);
    f.str("candidate", &x.candidate);
    f.str("reference", &x.reference);
    f.boolean("differs", &x.differs);
    d->fields.push_back(std::move(x));
  });
  r.objects("tensors", [&](JsonFields& t) {
    DrafterDiff::Tensor x;
    t.str("name", &x.name);
    t.str("issue", &x.issue);
    t.str("candidate", &x.candidate);
    t.str("reference", &x.reference);
    t.num("candidate_norm", &x.candidate_norm);
    t.num("reference_norm", &x.reference_norm);
    t.num("relative_distance", &x.relative_distance);
    d->tensors.push_back(std::move(x));
  });
  r.integer("tensors_compared", &d->tensors_compared);
  r.integer("tensors_identical", &d->tensors_identical);
}

void read_response(JsonFields& r, ResponseText* x) {
  r.integer("line", &x->line);
  r.list("prompt_ids", &x->prompt_ids);
  r.list("ids", &x->ids);
  r.str("text", &x->text);
  r.str("marked_text", &x->marked_text);
  r.num("tau", &x->tau);
  r.list("acceptance_lengths", &x->acceptance_lengths);
  // true / false, or null when no baseline ran (-1).
  std::optional<bool> matches;
  r.optional_boolean("matches_baseline", &matches);
  x->matches_baseline = matches ? (*matches ? 1 : 0) : -1;
  x->drafted = drafted_tokens(x->acceptance_lengths, x->ids.size());
}

}  // namespace

Result<EvalReport> eval_report_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("the eval report is " + json_type_phrase(j) + ", not an object");
  EvalReport rep;
  std::string error;
  JsonFields r(j, "", &error);
  for (auto [key, field] : {std::pair{"target", &rep.target},
                            {"target_architecture", &rep.target_architecture},
                            {"drafter", &rep.drafter},
                            {"reference", &rep.reference},
                            {"prompts", &rep.prompts},
                            {"prompt_format", &rep.prompt_format},
                            {"tokenizer", &rep.tokenizer},
                            {"device", &rep.device},
                            {"dtype", &rep.dtype},
                            {"dtype_source", &rep.dtype_source},
                            {"gate_message", &rep.gate_message}}) {
    r.str(key, field);
  }
  r.integer("prompt_count", &rep.prompt_count);
  r.integer("max_new_tokens", &rep.max_new_tokens);
  r.integer("block_size", &rep.block_size);
  r.integer("threads", &rep.threads);
  r.object("shard", [&](JsonFields& s) {
    s.integer("index", &rep.shard.index);
    s.integer("count", &rep.shard.count);
    s.integer("first_prompt", &rep.shard.first_prompt);
    s.integer("prompt_total", &rep.shard.prompt_total);
  });
  r.objects("shards", [&](JsonFields& s) {
    ShardRow row;
    s.str("stage", &row.stage);
    s.integer("first_prompt", &row.first_prompt);
    s.integer("prompts", &row.prompts);
    s.num("wall_seconds", &row.wall_seconds);
    s.integer("threads", &row.threads);
    s.integer("cores", &row.cores);
    rep.shards.push_back(std::move(row));
  });
  r.object("runtime", [&](JsonFields& rt) {
    rt.integer("cores", &rep.cores);
    rt.str("blas", &rep.blas);
    rt.str("blas_library", &rep.blas_library);
    rt.str("blas_threading", &rep.blas_threading);
    rt.boolean("blas_reference", &rep.blas_reference);
    rt.str("isa", &rep.isa);
  });
  r.objects("loads", [&](JsonFields& l) {
    rep.loads.emplace_back();
    read_load(l, &rep.loads.back());
  });
  r.object("candidate", [&](JsonFields& c) { read_run(c, &rep.candidate); });
  r.object("reference_run", [&](JsonFields& c) { read_run(c, &rep.reference_run.emplace()); });
  r.object("baseline", [&](JsonFields& c) { read_run(c, &rep.baseline.emplace()); });
  r.num("speedup", &rep.speedup);
  r.num("reference_speedup", &rep.reference_speedup);
  r.optional_num("ratio_to_reference", &rep.ratio_to_reference);
  r.object("diff", [&](JsonFields& d) { read_diff(d, &rep.diff.emplace()); });
  r.list("warnings", &rep.warnings);
  r.num("wall_seconds", &rep.wall_seconds);
  r.boolean("gate_passed", &rep.gate_passed);
  r.objects("responses", [&](JsonFields& x) {
    rep.responses.emplace_back();
    read_response(x, &rep.responses.back());
  });
  if (!error.empty()) return invalid_argument("the eval report's " + error);
  return rep;
}

}  // namespace ferry::eval
