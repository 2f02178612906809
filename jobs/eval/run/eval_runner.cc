#include "jobs/eval/run/eval_runner.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "jobs/eval/cpu/cpu_runtime.h"
#include "jobs/eval/io/model_fingerprint.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/models/target_model.h"
#include "jobs/eval/run/baseline_store.h"
#include "jobs/eval/run/cpu_contention.h"
#include "jobs/eval/run/drafter_diff.h"
#include "jobs/eval/run/eval_gate.h"
#include "jobs/eval/run/progress_meter.h"
#include "jobs/eval/run/prompt_encoder.h"
#include "jobs/eval/run/prompt_file.h"
#include "jobs/eval/run/speculative_decoder.h"

namespace ferry::eval {
namespace {

using Clock = std::chrono::steady_clock;

// The dtype the target's checkpoint stores its embedding in (its weights' dtype).
Result<StDtype> checkpoint_dtype(const std::string& folder) {
  auto ckpt = SafetensorsCheckpoint::open(folder);
  if (!ckpt.ok()) return ckpt.status();
  for (const char* name : {"model.embed_tokens.weight", "model.language_model.embed_tokens.weight"}) {
    if (!(*ckpt)->contains(name)) continue;
    auto info = (*ckpt)->info(name);
    if (!info.ok()) return info.status();
    return info->dtype;
  }
  return StDtype::kF32;  // the load names what is missing
}

Result<ComputeOptions> compute_options(const EvalSpec& spec, std::string* dtype_source) {
  ComputeOptions o;
  if (spec.dtype.empty() || spec.dtype == "auto") {
    // Follow the checkpoint: BF16 weights stay BF16 (used in place from the mapping,
    // half the bytes per token of float32); F16 computes in float32 on CPU, where
    // libtorch 1.13 has no fast half matmul.
    auto stored = checkpoint_dtype(spec.target);
    if (!stored.ok()) return stored.status();
    const bool cpu = spec.device == "cpu";
    o.dtype = *stored == StDtype::kBF16 ? at::kBFloat16 : *stored == StDtype::kF16 && !cpu ? at::kHalf : at::kFloat;
    *dtype_source = std::string("checkpoint ") + st_dtype_name(*stored);
  } else if (spec.dtype == "float32" || spec.dtype == "fp32" || spec.dtype == "f32") {
    o.dtype = at::kFloat;
  } else if (spec.dtype == "bfloat16" || spec.dtype == "bf16") {
    o.dtype = at::kBFloat16;
  } else if (spec.dtype == "float16" || spec.dtype == "fp16" || spec.dtype == "f16") {
    o.dtype = at::kHalf;
  } else {
    return invalid_argument("dtype '" + spec.dtype + "' is not one of auto, float32, bfloat16, float16");
  }
  if (dtype_source->empty()) *dtype_source = "--dtype";
  if (spec.device == "cpu") {
    o.device = at::kCPU;
  } else if (spec.device.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA()) {
      // Said for a workflow's eval stage as much as for `ferry eval` (newcomer report U10).
      return invalid_argument("device '" + spec.device +
                              "': this build of ferry's eval engine evaluates on CPU only "
                              "(its libtorch was built without CUDA): write "
                              "`device: cpu` in the eval stage (`--device cpu` for ferry eval), or run an eval "
                              "worker built with CUDA");
    }
    try {
      o.device = at::Device(spec.device);
    } catch (const c10::Error& e) {
      return invalid_argument("device '" + spec.device + "': " + e.what_without_backtrace());
    }
  } else {
    return invalid_argument("device '" + spec.device + "' is not cpu or cuda");
  }
  return o;
}

Status check_spec(const EvalSpec& spec) {
  if (spec.target.empty()) return invalid_argument("eval: 'target' is required");
  if (spec.drafter.empty()) return invalid_argument("eval: 'drafter' is required");
  if (spec.prompts.empty() && spec.datasets.empty()) return invalid_argument("eval: 'prompts' is required");
  FERRY_RETURN_IF_ERROR(check_datasets(spec.datasets, spec.prompts).with_context("eval"));
  if (spec.max_new_tokens < 1) return invalid_argument("eval: max_new_tokens must be at least 1");
  if (spec.block_size < 0) return invalid_argument("eval: block_size must be >= 0 (0 = from the drafter config)");
  if (spec.threads < 0) return invalid_argument("eval: threads must be >= 0");
  if (spec.shard_count < 1 || spec.shard_index < 0 || spec.shard_index >= spec.shard_count) {
    return invalid_argument("eval: shard " + std::to_string(spec.shard_index) + " of " +
                            std::to_string(spec.shard_count) + " does not exist (0 <= index < count)");
  }
  if (spec.min_ratio_to_reference && spec.reference.empty()) {
    return invalid_argument("eval: gate min_ratio_to_reference needs a reference drafter");
  }
  return Status();
}

// Runs one decoding configuration over every prompt and gathers its statistics.
Result<DecodeRun> run_all(const std::string& label, const std::string& path, TargetModel* target, Drafter* drafter,
                          const std::vector<Prompt>& prompts, const DecodeOptions& options,
                          std::vector<std::vector<int64_t>>* outputs, ProgressMeter* meter,
                          std::vector<std::vector<int64_t>>* acceptances = nullptr) {
  DecodeRun run;
  run.label = label;
  run.path = path;
  run.block_size = options.block_size;
  run.acceptance_histogram.assign(static_cast<size_t>(options.block_size + 1), 0);
  run.accepted_at.assign(static_cast<size_t>(options.block_size), 0);
  meter->start_run(label);
  const CpuContentionMeter cpu;  // did other processes take this pass's cores? (the speedup's warning)
  for (size_t i = 0; i < prompts.size(); ++i) {
    DecodeOptions one = options;
    one.response_index = static_cast<uint64_t>(prompts[i].index);  // the sampling uniforms' r
    auto r = speculative_decode(target, drafter, prompts[i].ids, one);
    if (!r.ok()) return r.status().with_context(label + ": prompt line " + std::to_string(prompts[i].line));
    run.responses += 1;
    run.response_taus.push_back(r->tau());
    for (int64_t a : r->acceptance_lengths) ++run.acceptance_histogram[static_cast<size_t>(a)];
    for (size_t j = 0; j < run.accepted_at.size(); ++j) run.accepted_at[j] += r->accepted_at[j];
    run.steps += r->steps;
    run.target_forwards += r->target_forwards;
    run.draft_forwards += r->draft_forwards;
    run.generated_tokens += static_cast<int64_t>(r->tokens.size());
    run.prefill_seconds += r->prefill_seconds;
    run.decode_seconds += r->decode_seconds;
    run.target_seconds += r->target_seconds;
    run.draft_seconds += r->draft_seconds;
    run.response_tpots.push_back(-1);  // no tokens
    if (!r->tokens.empty()) {
      run.response_tpots.back() = r->decode_seconds / static_cast<double>(r->tokens.size());
      run.tpot_sum += run.response_tpots.back();
      ++run.tpot_count;
    }
    if (outputs != nullptr) outputs->push_back(r->tokens);
    if (acceptances != nullptr) acceptances->push_back(r->acceptance_lengths);
    meter->response_done(static_cast<int64_t>(r->tokens.size()), r->tau());
  }
  const CpuContention used = cpu.finish(at::get_num_threads());
  run.cpu_seconds = used.own_seconds;
  run.cpu_capacity_seconds = used.capacity_seconds;
  run.contending_cpu_seconds = used.contending_seconds;
  finish_decode_run(&run);
  return run;
}

int64_t count_differing(const std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] != b[i] ? 1 : 0;
  return n;
}

using SayFn = std::function<void(const std::string&)>;

// Step 1: the spec's dtype and device, the threads, and what this CPU and BLAS are.
Result<ComputeOptions> describe_runtime(const EvalSpec& spec, EvalReport* report, const SayFn& say) {
  FERRY_RETURN_IF_ERROR(check_spec(spec));
  std::string dtype_source;
  auto options = compute_options(spec, &dtype_source);
  if (!options.ok()) return options.status();
  report->host = spec.host;
  report->target = spec.target;
  report->drafter = spec.drafter;
  report->reference = spec.reference;
  report->prompts = spec.prompts;
  report->max_new_tokens = spec.max_new_tokens;
  report->device = spec.device;
  report->dtype = options->dtype == at::kBFloat16 ? "bfloat16" : options->dtype == at::kHalf ? "float16" : "float32";
  report->dtype_source = dtype_source;
  report->threads = configure_threads(
      spec.threads > 0 ? spec.threads : std::max(1, available_cores() / std::max(1, spec.shards_on_host)));
  CpuRuntime runtime = probe_cpu_runtime();
  report->blas = runtime.blas.name;
  report->blas_library = runtime.blas.library;
  report->blas_threading = runtime.blas.threading;
  report->blas_reference = runtime.blas.reference;
  report->isa = runtime.isa;
  report->cores = runtime.cores;
  say("running on " + spec.device + ", " + report->dtype + " (" + dtype_source + "), " +
      std::to_string(report->threads) + (report->threads == 1 ? " thread" : " threads") + ", BLAS " + report->blas +
      ", " + report->isa);
  if (runtime.blas.reference) {
    report->warnings.push_back(runtime.blas.advice());
    say("WARNING: " + runtime.blas.advice());
  }
  return options;
}

// The models one eval decodes with; the proposers point into the target and drafters.
struct LoadedModels {
  std::unique_ptr<TargetModel> target;
  std::unique_ptr<DFlashDrafter> drafter, reference;
  std::unique_ptr<DFlashProposer> proposer, reference_proposer;
};

// The model folders this eval loaded, by content (model_fingerprint.h): the target,
// the drafters and a tokenizer folder of its own, so that the merge of a sharded eval
// can refuse shards that read other files under one path. The prompts' come with them
// (encode_prompts, load_datasets: prompts_fingerprint).
Status fingerprint_models(const EvalSpec& spec, EvalReport* report) {
  auto folder = [&](const std::string& what, const std::string& path) -> Status {
    auto digest = model_fingerprint(path);
    if (!digest.ok()) return digest.status().with_context("fingerprint of the " + what);
    report->fingerprints.push_back({what, *digest, copy_manifest_hash(path)});
    return Status();
  };
  FERRY_RETURN_IF_ERROR(folder("target", spec.target));
  FERRY_RETURN_IF_ERROR(folder("drafter", spec.drafter));
  if (!spec.reference.empty()) FERRY_RETURN_IF_ERROR(folder("reference", spec.reference));
  if (!spec.tokenizer.empty()) FERRY_RETURN_IF_ERROR(folder("tokenizer", spec.tokenizer));
  return Status();
}

// Before the models load (minutes for a large one): a prompts file that is not there
// fails now, as its read would later. Only stat: a FIFO's prompts can be read once.
Status check_prompt_files_exist(const EvalSpec& spec) {
  std::vector<std::string> files;
  for (const auto& d : spec.datasets) files.push_back(d.prompts);
  if (spec.datasets.empty()) files.push_back(spec.prompts);
  for (const auto& f : files) {
    struct stat st;
    if (::stat(f.c_str(), &st) != 0) return errno_status(f + ": cannot open", errno);
  }
  return Status();
}

// Step 2: the target, the drafter and the reference drafter, with what each load found.
Result<LoadedModels> load_models(const EvalSpec& spec, const ComputeOptions& options, EvalReport* report,
                                 const SayFn& say) {
  LoadedModels m;
  say("loading target " + spec.target);
  LoadReport target_load;
  auto target = load_target(spec.target, options, &target_load);
  if (!target.ok()) return target.status();
  m.target = std::move(*target);
  report->loads.push_back(target_load);
  report->target_architecture = m.target->describe();
  say("target: " + report->target_architecture);
  const int64_t hidden = m.target->config().hidden_size;

  say("loading drafter " + spec.drafter);
  LoadReport drafter_load;
  auto drafter = DFlashDrafter::load(spec.drafter, hidden, options, &drafter_load, "drafter");
  if (!drafter.ok()) return drafter.status();
  m.drafter = std::move(*drafter);
  report->loads.push_back(drafter_load);
  auto proposer = DFlashProposer::create(m.target.get(), m.drafter.get());
  if (!proposer.ok()) return proposer.status();
  m.proposer = std::move(*proposer);

  if (!spec.reference.empty()) {
    say("loading reference drafter " + spec.reference);
    LoadReport ref_load;
    auto r = DFlashDrafter::load(spec.reference, hidden, options, &ref_load, "reference drafter");
    if (!r.ok()) return r.status();
    report->loads.push_back(ref_load);
    m.reference = std::move(*r);
    auto rp = DFlashProposer::create(m.target.get(), m.reference.get());
    if (!rp.ok()) return rp.status();
    m.reference_proposer = std::move(*rp);
    auto diff = diff_drafters(spec.drafter, spec.reference);
    if (!diff.ok()) return diff.status();
    report->diff = std::move(*diff);
  }
  for (const auto& l : report->loads) {
    if (!l.unused.empty()) {
      report->warnings.push_back(l.what + " " + l.location + ": " + std::to_string(l.unused.size()) +
                                 " checkpoint tensors were not used");
    }
  }
  return m;
}

// Step 3 with named datasets: each file's prompts in the order given, a shard taking
// its part of every file (so each shard sees every dataset); one report row each.
Result<std::vector<Prompt>> load_datasets(const EvalSpec& spec, int64_t vocab_size, PromptEncoder* encoder,
                                          EvalReport* report, const SayFn& say) {
  std::vector<Prompt> all;
  int64_t total = 0, before_shard = 0;
  for (const DatasetFile& file : spec.datasets) {
    auto prompts = load_prompts(file.prompts, vocab_size, encoder);
    if (!prompts.ok()) return prompts.status().with_context("dataset '" + file.name + "'");
    report->fingerprints.push_back({"dataset " + file.name, prompts_fingerprint(*prompts), ""});  // all of the file
    const auto n = static_cast<int64_t>(prompts->size());
    const int64_t first = ShardOf::slice(spec.shard_index, spec.shard_count, n).first_prompt;
    const int64_t end = ShardOf::slice(spec.shard_index + 1, spec.shard_count, n).first_prompt;
    DatasetRow row;
    row.name = file.name;
    row.file = file.prompts;
    row.first_prompt = static_cast<int64_t>(all.size());
    row.prompts = end - first;
    row.prompt_total = n;
    row.first_in_file = first;
    report->datasets.push_back(row);
    all.insert(all.end(), prompts->begin() + first, prompts->begin() + end);
    total += n;
    before_shard += first;
  }
  report->prompts = describe_datasets(spec.datasets);
  report->shard = ShardOf{spec.shard_index, spec.shard_count, before_shard, total};
  report->prompt_count = static_cast<int64_t>(all.size());
  say(std::to_string(spec.datasets.size()) + " datasets, " + std::to_string(all.size()) + " prompts" +
      (spec.shard_count > 1
           ? " (shard " + std::to_string(spec.shard_index + 1) + " of " + std::to_string(spec.shard_count) + " of each)"
           : ""));
  return all;
}

// Step 3: the prompts as ids, through the model's tokenizer and prompt format.
Result<std::vector<Prompt>> encode_prompts(const EvalSpec& spec, const TargetModel& target,
                                           std::optional<PromptEncoder>* encoder, EvalReport* report,
                                           const SayFn& say) {
  auto format = tokenizer::parse_prompt_format(spec.prompt_format);
  if (!format.ok()) return format.status();
  auto opened = PromptEncoder::open(spec.tokenizer, spec.target, *format, target.config().vocab_size);
  if (!opened.ok()) return opened.status();
  encoder->emplace(std::move(*opened));
  report->prompt_format = spec.prompt_format;
  if ((*encoder)->tokenizer() != nullptr) {
    report->tokenizer = (spec.tokenizer.empty() ? spec.target : spec.tokenizer) + "/tokenizer.json";
    say("tokenizer " + report->tokenizer + ", prompt format " + spec.prompt_format);
  }
  if (!spec.datasets.empty()) return load_datasets(spec, target.config().vocab_size, &**encoder, report, say);
  auto prompts = load_prompts(spec.prompts, target.config().vocab_size, &**encoder);
  if (!prompts.ok()) return prompts.status();
  report->fingerprints.push_back({"prompts", prompts_fingerprint(*prompts), ""});  // all of the file, not the shard's
  // A shard decodes its contiguous part; the lines stay the file's, so shards merge in order.
  const auto total = static_cast<int64_t>(prompts->size());
  report->shard = ShardOf::slice(spec.shard_index, spec.shard_count, total);
  const int64_t end = ShardOf::slice(spec.shard_index + 1, spec.shard_count, total).first_prompt;
  prompts->erase(prompts->begin() + end, prompts->end());
  prompts->erase(prompts->begin(), prompts->begin() + report->shard.first_prompt);
  if (spec.shard_count > 1) {
    say("shard " + std::to_string(spec.shard_index + 1) + " of " + std::to_string(spec.shard_count) + ": prompts " +
        std::to_string(report->shard.first_prompt + 1) + "-" + std::to_string(end) + " of " + std::to_string(total));
  }
  report->prompt_count = static_cast<int64_t>(prompts->size());
  return prompts;
}

// The reference drafter's run and the plain baseline, decoded here: what a later
// eval with the same key may take from the store instead (baseline_store.h).
Status decode_shared_runs(const EvalSpec& spec, const LoadedModels& m, const std::vector<Prompt>& prompts,
                          const DecodeOptions& decode, ProgressMeter* meter, StoredRuns* out) {
  std::vector<std::vector<int64_t>> reference_out;
  if (m.reference_proposer) {
    DecodeOptions ref = decode;
    ref.block_size = spec.block_size > 0 ? spec.block_size : m.reference->config().block_size;
    ref.capture_layers = m.reference->config().target_layer_ids;
    auto ref_run = run_all("reference", spec.reference, m.target.get(), m.reference_proposer.get(), prompts, ref,
                           &reference_out, meter);
    if (!ref_run.ok()) return ref_run.status();
    out->reference = std::move(*ref_run);
  }
  if (spec.baseline) {
    DecodeOptions base = decode;
    base.block_size = 1;
    auto base_run = run_all("baseline", "", m.target.get(), nullptr, prompts, base, &out->baseline_tokens, meter);
    if (!base_run.ok()) return base_run.status();
    out->baseline = std::move(*base_run);
    if (out->reference) {
      out->reference->responses_differing_from_baseline = count_differing(reference_out, out->baseline_tokens);
    }
  }
  return Status();
}

// The key of this eval's reference and baseline runs (baseline_store.h): the files
// by content, and every setting that changes what they decode or how fast.
Result<nlohmann::json> shared_runs_key_inputs(const EvalSpec& spec, const LoadedModels& m, const EvalReport& report) {
  const int64_t reference_block = !m.reference          ? 0
                                  : spec.block_size > 0 ? spec.block_size
                                                        : m.reference->config().block_size;
  BaselineInputs in;
  in.target = spec.target;
  in.reference = spec.reference;
  in.hash_cache = file_hash_cache_path(spec.baseline_store);
  in.prompts = spec.prompts;
  in.tokenizer = spec.tokenizer;
  in.settings = {{"max_new_tokens", spec.max_new_tokens},
                 {"reference_block_size", reference_block},
                 {"prompt_format", spec.prompt_format},
                 {"device", spec.device},
                 {"dtype", report.dtype},
                 {"threads", report.threads},  // the baseline's timing is the speedup's
                 {"baseline", spec.baseline},
                 {"temperature", spec.temperature},
                 {"seed", spec.seed},
                 {"shard_index", spec.shard_index},
                 {"shard_count", spec.shard_count}};
  if (!spec.datasets.empty()) {  // named datasets: every file's content, in order (eval_datasets.h)
    auto files = datasets_content(spec.datasets);
    if (!files.ok()) return files.status().with_context("baseline key");
    in.settings["datasets"] = std::move(*files);
    in.prompts = spec.datasets[0].prompts;
  }
  return baseline_key_inputs(in);
}

// With a store asked for: its runs under this eval's key, when an earlier eval left
// them there (report->baseline_key set either way). A stored file this eval cannot
// use is said and decoded again.
Result<std::optional<StoredRuns>> find_shared_runs(const EvalSpec& spec, const LoadedModels& m, int64_t prompts,
                                                   const SayFn& say, EvalReport* report, nlohmann::json* key_inputs) {
  if (spec.baseline_store.empty() || (!m.reference_proposer && !spec.baseline)) return std::optional<StoredRuns>();
  auto inputs = shared_runs_key_inputs(spec, m, *report);
  if (!inputs.ok()) return inputs.status();
  *key_inputs = std::move(*inputs);
  report->baseline_key = baseline_key(*key_inputs);
  auto stored = read_stored_runs(spec.baseline_store, report->baseline_key, prompts, m.reference_proposer != nullptr,
                                 spec.baseline);
  if (!stored.ok()) {
    report->warnings.push_back("stored baseline not used: " + stored.status().message() + "; decoded again");
    say("WARNING: " + report->warnings.back());
    return std::optional<StoredRuns>();
  }
  if (*stored) {
    say("reference and baseline: reused from the eval of " + (*stored)->computed_by + " (key " + report->baseline_key +
        ")");
  }
  return stored;
}

// The shared runs into the report, each response compared with the baseline's tokens.
void take_shared_runs(StoredRuns shared, const std::vector<std::vector<int64_t>>& candidate_out, EvalReport* report) {
  report->reference_run = std::move(shared.reference);
  report->baseline = std::move(shared.baseline);
  if (!report->baseline) return;
  const auto& baseline_out = shared.baseline_tokens;
  report->candidate.responses_differing_from_baseline = count_differing(candidate_out, baseline_out);
  for (size_t i = 0; i < report->responses.size() && i < baseline_out.size(); ++i) {
    report->responses[i].matches_baseline = candidate_out[i] == baseline_out[i] ? 1 : 0;
  }
}

// Keeps this eval's reference and baseline runs for later evals with its key; a
// store that cannot be written is a warning, not a failed eval.
void store_shared_runs(const EvalSpec& spec, const nlohmann::json& key_inputs, const StoredRuns& runs, const SayFn& say,
                       EvalReport* report) {
  StoredRuns keep = runs;
  keep.key = report->baseline_key;
  keep.inputs = key_inputs;
  keep.computed_by = spec.drafter;
  report->baseline_computed_by = spec.drafter;
  Status written = write_stored_runs(spec.baseline_store, keep);
  if (written.ok()) return say("reference and baseline stored for later evals (key " + keep.key + ")");
  report->warnings.push_back("the baseline could not be stored for later evals: " + written.message());
  say("WARNING: " + report->warnings.back());
}

// Step 4: the candidate over every prompt, then the reference and the plain-decoding
// baseline when asked (decoded, or taken from the store), each compared with the candidate.
Status decode_all(const EvalSpec& spec, const LoadedModels& m, const std::vector<Prompt>& prompts,
                  PromptEncoder& encoder, const std::atomic<bool>* cancel, const SayFn& say, EvalReport* report) {
  DecodeOptions decode;
  decode.block_size = spec.block_size > 0 ? spec.block_size : m.drafter->config().block_size;
  decode.max_new_tokens = spec.max_new_tokens;
  decode.stop_ids = m.target->config().eos_token_ids;
  decode.cancel = cancel;
  decode.sampling = Sampling{spec.temperature, spec.seed};
  report->sampling = decode.sampling;
  report->block_size = decode.block_size;
  nlohmann::json key_inputs;
  auto stored = find_shared_runs(spec, m, static_cast<int64_t>(prompts.size()), say, report, &key_inputs);
  if (!stored.ok()) return stored.status();
  report->baseline_reused = stored->has_value();
  const int runs = 1 + (*stored ? 0 : (m.reference_proposer ? 1 : 0) + (spec.baseline ? 1 : 0));
  ProgressMeter meter(static_cast<int64_t>(prompts.size()), runs, say);

  std::vector<std::vector<int64_t>> candidate_out, candidate_acceptance;
  DecodeOptions cand = decode;
  cand.capture_layers = m.drafter->config().target_layer_ids;
  say("decoding " + std::to_string(prompts.size()) + " prompts, block " + std::to_string(cand.block_size));
  auto cand_run = run_all("candidate", spec.drafter, m.target.get(), m.proposer.get(), prompts, cand, &candidate_out,
                          &meter, &candidate_acceptance);
  if (!cand_run.ok()) return cand_run.status();
  report->candidate = std::move(*cand_run);
  report->target_forwards_run = report->candidate.target_forwards;
  for (size_t i = 0; i < candidate_out.size(); ++i) {
    report->responses.push_back(
        make_response_text(prompts[i].line, candidate_out[i], candidate_acceptance[i], encoder.tokenizer()));
    report->responses.back().prompt_ids = prompts[i].ids;
  }
  report->show_responses = spec.show_responses;

  StoredRuns shared;
  if (*stored) {
    shared = std::move(**stored);
    report->baseline_computed_by = shared.computed_by;
  } else {
    FERRY_RETURN_IF_ERROR(decode_shared_runs(spec, m, prompts, decode, &meter, &shared));
    for (const auto* run : {&shared.reference, &shared.baseline}) {
      if (*run) report->target_forwards_run += (*run)->target_forwards;
    }
    if (!report->baseline_key.empty()) store_shared_runs(spec, key_inputs, shared, say, report);
  }
  take_shared_runs(std::move(shared), candidate_out, report);
  compare_runs(report);
  return Status();
}

// A pass timed while other processes took CPU makes the speedup unreliable: said in
// the report's warnings, first (they qualify the figures the others are about), and
// on the progress lines.
void warn_of_cpu_contention(const SayFn& say, EvalReport* report) {
  std::vector<std::string> cpu;
  for (const DecodeRun* run : {&report->candidate, report->reference_run ? &*report->reference_run : nullptr,
                               report->baseline ? &*report->baseline : nullptr}) {
    if (run == nullptr) continue;
    if (auto w = cpu_contention_warning(*run)) {
      cpu.push_back(*w);
      say("WARNING: " + *w);
    }
  }
  report->warnings.insert(report->warnings.begin(), cpu.begin(), cpu.end());
}

Result<EvalReport> run_eval_unguarded(const EvalSpec& spec, const ProgressFn& progress,
                                      const std::atomic<bool>* cancel) {
  const SayFn say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const auto wall = Clock::now();
  EvalReport report;
  auto options = describe_runtime(spec, &report, say);
  if (!options.ok()) return options.status();
  FERRY_RETURN_IF_ERROR(check_prompt_files_exist(spec));
  c10::NoGradGuard no_grad;
  auto models = load_models(spec, *options, &report, say);
  if (!models.ok()) return models.status();
  FERRY_RETURN_IF_ERROR(fingerprint_models(spec, &report));  // the folders just loaded, by content
  std::optional<PromptEncoder> encoder;
  auto prompts = encode_prompts(spec, *models->target, &encoder, &report, say);
  if (!prompts.ok()) return prompts.status();
  FERRY_RETURN_IF_ERROR(decode_all(spec, *models, *prompts, *encoder, cancel, say, &report));
  count_dataset_acceptance(&report);  // each named dataset's row (eval_datasets.h)
  finish_datasets(&report);
  warn_of_cpu_contention(say, &report);
  if (spec.gate_deferred.empty()) {
    judge_gate(spec.min_tau, spec.min_ratio_to_reference, &report);  // step 5
  } else {
    defer_gate(spec.gate_deferred, &report);
  }
  report.wall_seconds = std::chrono::duration<double>(Clock::now() - wall).count();
  say("done: tau " + std::to_string(report.candidate.tau));
  return report;
}

}  // namespace

Result<EvalReport> run_eval(const EvalSpec& spec, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  try {
    return run_eval_unguarded(spec, progress, cancel);
  } catch (const c10::Error& e) {
    return internal_error(std::string("eval: libtorch error: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return internal_error(std::string("eval: ") + e.what());
  } catch (...) {
    return internal_error("eval: unknown exception");
  }
}

}  // namespace ferry::eval
