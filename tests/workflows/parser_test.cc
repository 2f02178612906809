// The parser on valid input: every key lands in the right model field, defaults
// are filled in, and -p overrides are applied. Malformed input is covered by
// malformed_test.cc and the corpus beside it.
#include "workflows/parser.h"
#include "workflows/eval_shards.h"
#include "workflows/param_overrides.h"
#include "workflows/slurm_options.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace ferry::workflow {
namespace {

// Written for this test to use every key the language has at least once.
constexpr char kFull[] = R"(name: dflash-train
description: train a drafter, copy it, score it
params:
  lr: "0.001"
  steps: 100
  empty:
hosts:
  laptop:
    transport: local
    workdir: runs/${{ params.lr }}
    env:
      ROLE: laptop
    give_up: 2m
  gpu:
    transport: ssh
    address: gpu.example.com
    port: 2222
    user: ferry
    identity: ~/.ssh/id_ed25519
    known_hosts: ~/.ssh/ferry_known_hosts
    trust: first-use
    ssh_config: none
    description: the training box
stages:
  train:
    host: gpu
    run: python train.py --lr ${{ params.lr }} --steps ${{ params.steps }}
    cwd: src
    env:
      RUN: ${{ run.id }}
      CUDA_VISIBLE_DEVICES: "0"
    outputs: [ckpt, loss]
    timeout: 1h30m
    retries: 3
    retry_backoff: 500ms
    retry_on: [75, 137]
  ship:
    kind: copy
    needs: train
    from: gpu:${{ stages.train.outputs.ckpt }}
    to: laptop:ckpt/
    route: relay
    keep_local: cache/ckpt
    streams: 8
  score:
    kind: eval
    needs: [ship]
    target: /models/qwen3
    drafter: ${{ stages.ship.outputs.path }}
    reference: /models/reference
    prompts: prompts.jsonl
    prompt_format: chat-no-think
    tokenizer: /models/qwen3-tokenizer
    max_new_tokens: 64
    block_size: 16
    device: cuda
    dtype: bfloat16
    threads: 8
    gate:
      min_tau: 2.5
      min_ratio_to_reference: 1.1
    timeout: 30
  report:
    host: laptop
    needs: [score, train]
    run: echo ${{ stages.score.outputs.tau }} ${{ hosts.gpu.address }} ${{ hosts.laptop.workdir }}
    retry_on: 1
    outputs:
      summary: ${{ stages.score.outputs.speedup }}
      log:
)";

class ParserTest : public ::testing::Test {
 protected:
  Workflow parse_ok(const std::string& text) {
    Diagnostics d("wf.yaml");
    Workflow wf = parse_workflow_collecting("wf.yaml", text, &d);
    EXPECT_TRUE(d.empty()) << d.to_string();
    return wf;
  }
};

TEST_F(ParserTest, FullWorkflowParsesWithoutDiagnostics) {
  auto r = parse_workflow("wf.yaml", kFull);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->path, "wf.yaml");
  EXPECT_EQ(r->source, kFull);
  EXPECT_EQ(r->name, "dflash-train");
  EXPECT_EQ(r->name_at.line, 1);
  EXPECT_EQ(r->name_at.column, 7);
}

TEST_F(ParserTest, FullWorkflowParams) {
  Workflow wf = parse_ok(kFull);
  ASSERT_EQ(wf.params.size(), 3u);
  EXPECT_EQ(wf.params[0].name, "lr");
  EXPECT_EQ(wf.params[0].default_value, "0.001");
  EXPECT_EQ(wf.params[0].at.line, 4);
  EXPECT_EQ(wf.params[0].at.column, 3);
  EXPECT_EQ(wf.params[1].name, "steps");
  EXPECT_EQ(wf.params[1].default_value, "100");
  EXPECT_EQ(wf.params[2].name, "empty");
  EXPECT_EQ(wf.params[2].default_value, "");
  EXPECT_EQ(wf.find_param("steps"), &wf.params[1]);
  EXPECT_EQ(wf.find_param("nope"), nullptr);
}

TEST_F(ParserTest, FullWorkflowHosts) {
  Workflow wf = parse_ok(kFull);
  ASSERT_EQ(wf.hosts.size(), 2u);
  const Host& laptop = wf.hosts[0];
  EXPECT_EQ(laptop.name, "laptop");
  EXPECT_EQ(laptop.at.line, 8);
  EXPECT_EQ(laptop.at.column, 3);
  EXPECT_TRUE(std::holds_alternative<LocalLink>(laptop.link));
  EXPECT_EQ(laptop.transport(), Transport::kLocal);
  EXPECT_EQ(laptop.workdir.value, "runs/${{ params.lr }}");  // expanded at run time
  EXPECT_EQ(laptop.workdir.at.line, 10);
  EXPECT_EQ(laptop.workdir.at.column, 14);
  ASSERT_EQ(laptop.env.count("ROLE"), 1u);
  EXPECT_EQ(laptop.env.at("ROLE").value, "laptop");
  EXPECT_DOUBLE_EQ(laptop.give_up_s, 120);

  const Host& gpu = wf.hosts[1];
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_EQ(gpu.transport(), Transport::kSsh);
  const auto* ssh = std::get_if<SshLink>(&gpu.link);
  ASSERT_NE(ssh, nullptr);
  EXPECT_EQ(ssh->address, "gpu.example.com");
  EXPECT_EQ(ssh->port, 2222);
  EXPECT_EQ(ssh->user, "ferry");
  EXPECT_EQ(ssh->identity, "~/.ssh/id_ed25519");
  EXPECT_EQ(ssh->known_hosts, "~/.ssh/ferry_known_hosts");
  EXPECT_TRUE(ssh->trust_first_use);
  EXPECT_EQ(ssh->ssh_config, "none");
  EXPECT_EQ(ssh->ciphers, "");
  EXPECT_TRUE(gpu.workdir.empty());
  EXPECT_DOUBLE_EQ(gpu.give_up_s, 600);
  EXPECT_EQ(wf.find_host("gpu"), &wf.hosts[1]);
}

TEST_F(ParserTest, FullWorkflowCommandStage) {
  Workflow wf = parse_ok(kFull);
  ASSERT_EQ(wf.stages.size(), 4u);
  const Stage& s = wf.stages[0];
  EXPECT_EQ(s.name, "train");
  EXPECT_EQ(s.at.line, 25);
  EXPECT_EQ(s.at.column, 3);
  EXPECT_EQ(s.kind, StageKind::kCommand);
  EXPECT_EQ(s.host, "gpu");
  EXPECT_EQ(s.host_at.line, 26);
  EXPECT_EQ(s.host_at.column, 11);
  EXPECT_TRUE(s.needs.empty());
  EXPECT_EQ(s.run.value, "python train.py --lr ${{ params.lr }} --steps ${{ params.steps }}");
  EXPECT_EQ(s.run.at.line, 27);
  EXPECT_EQ(s.run.at.column, 10);
  EXPECT_EQ(s.cwd.value, "src");
  ASSERT_EQ(s.env.size(), 2u);
  EXPECT_EQ(s.env.at("RUN").value, "${{ run.id }}");
  EXPECT_EQ(s.env.at("CUDA_VISIBLE_DEVICES").value, "0");
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_EQ(s.outputs[0].name, "ckpt");
  EXPECT_FALSE(s.outputs[0].value.has_value());
  EXPECT_EQ(s.outputs[0].at.line, 32);
  EXPECT_EQ(s.outputs[0].at.column, 15);
  EXPECT_EQ(s.outputs[1].name, "loss");
  EXPECT_DOUBLE_EQ(s.timeout_s, 5400);
  EXPECT_EQ(s.retries, 3);
  EXPECT_DOUBLE_EQ(s.retry_backoff_s, 0.5);
  EXPECT_EQ(s.retry_on, (std::vector<int>{75, 137}));
}

TEST_F(ParserTest, FullWorkflowCopyStage) {
  Workflow wf = parse_ok(kFull);
  const Stage* s = wf.find_stage("ship");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, StageKind::kCopy);
  EXPECT_EQ(s->host, "");  // copy stages name their hosts in from/to
  EXPECT_EQ(s->needs, (std::vector<std::string>{"train"}));
  ASSERT_EQ(s->needs_at.size(), 1u);
  EXPECT_EQ(s->needs_at[0].line, 39);
  EXPECT_EQ(s->needs_at[0].column, 12);
  EXPECT_EQ(s->from.host, "gpu");
  EXPECT_EQ(s->from.path.value, "${{ stages.train.outputs.ckpt }}");
  EXPECT_EQ(s->to.host, "laptop");
  EXPECT_EQ(s->to.path.value, "ckpt/");
  EXPECT_EQ(s->route, workflow::CopyRoute::kRelay);
  EXPECT_EQ(s->keep_local.value, "cache/ckpt");
  EXPECT_EQ(s->streams, 8);
  EXPECT_DOUBLE_EQ(s->timeout_s, 0);
  EXPECT_EQ(s->retries, 0);
  EXPECT_DOUBLE_EQ(s->retry_backoff_s, 1);
}

TEST_F(ParserTest, FullWorkflowEvalStage) {
  Workflow wf = parse_ok(kFull);
  const Stage* s = wf.find_stage("score");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kind, StageKind::kEval);
  EXPECT_EQ(s->needs, (std::vector<std::string>{"ship"}));
  EXPECT_EQ(s->target.value, "/models/qwen3");
  EXPECT_EQ(s->drafter.value, "${{ stages.ship.outputs.path }}");
  EXPECT_EQ(s->reference.value, "/models/reference");
  EXPECT_EQ(s->prompts.value, "prompts.jsonl");
  EXPECT_EQ(s->prompt_format, "chat-no-think");
  EXPECT_EQ(s->tokenizer.value, "/models/qwen3-tokenizer");
  EXPECT_EQ(s->max_new_tokens, 64);
  EXPECT_EQ(s->block_size, 16);
  EXPECT_EQ(s->device, "cuda");
  EXPECT_EQ(s->dtype, "bfloat16");
  EXPECT_EQ(s->threads, 8);
  ASSERT_TRUE(s->gate.min_tau.has_value());
  EXPECT_DOUBLE_EQ(*s->gate.min_tau, 2.5);
  ASSERT_TRUE(s->gate.min_ratio_to_reference.has_value());
  EXPECT_DOUBLE_EQ(*s->gate.min_ratio_to_reference, 1.1);
  EXPECT_DOUBLE_EQ(s->timeout_s, 30);
}

// Newcomer report U10: `device: gpu` was refused with "did you mean 'cpu'?", and an
// engineer who took the advice moved the eval off the GPU.
TEST_F(ParserTest, DeviceGpuIsCuda) {
  Workflow wf = parse_ok(
      "name: g\nstages:\n  e:\n    kind: eval\n    target: t\n    drafter: d\n    prompts: p.jsonl\n"
      "    device: gpu\n");
  const Stage* s = wf.find_stage("e");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->device, "cuda");
}

// Issue 43: `prompts:` as a map names datasets, each a file (a template), in order.
TEST_F(ParserTest, EvalPromptsAsNamedDatasets) {
  Workflow wf = parse_ok(
      "name: g\nparams:\n  dir: /data\nstages:\n  e:\n    kind: eval\n    target: t\n    drafter: d\n"
      "    prompts:\n      gsm8k: ${{ params.dir }}/gsm8k.jsonl\n      humaneval: coordinator:h.jsonl\n");
  const Stage* s = wf.find_stage("e");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->prompts.empty());
  ASSERT_EQ(s->prompt_sets.size(), 2u);
  EXPECT_EQ(s->prompt_sets[0].first, "gsm8k");
  EXPECT_EQ(s->prompt_sets[0].second.value, "${{ params.dir }}/gsm8k.jsonl");
  EXPECT_EQ(s->prompt_sets[0].second.at.line, 10);
  EXPECT_EQ(s->prompt_sets[1].first, "humaneval");
  EXPECT_EQ(s->prompt_sets[1].second.value, "coordinator:h.jsonl");
}

// Issue 43: an eval samples the target's tokens at temperature > 0 with a seed.
TEST_F(ParserTest, EvalTemperatureAndSeed) {
  const std::string head =
      "name: g\nstages:\n  e:\n    kind: eval\n    target: t\n    drafter: d\n    prompts: p.jsonl\n";
  Workflow wf = parse_ok(head + "    temperature: 0.7\n    seed: 9223372036854775807\n");
  const Stage* s = wf.find_stage("e");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->temperature, 0.7);
  EXPECT_EQ(s->seed, 9223372036854775807ULL);
  const Workflow plain = parse_ok(head);  // greedy by default
  ASSERT_NE(plain.find_stage("e"), nullptr);
  EXPECT_EQ(plain.find_stage("e")->temperature, 0);
  for (const auto& [bad, want] : std::vector<std::pair<std::string, std::string>>{
           {"    temperature: -0.5\n", "wf.yaml:8:18: 'temperature' must be between 0 (greedy) and 100, got -0.5"},
           {"    temperature: .nan\n", "'temperature' must be"},
           {"    temperature: hot\n", "'temperature' must be a number, got 'hot'"},
           {"    seed: -1\n", "wf.yaml:8:11: 'seed' must be between 0 and 9223372036854775807, got -1"},
           {"    seed: 1.5\n", "'seed' must be an integer"}}) {
    Diagnostics d("wf.yaml");
    parse_workflow_collecting("wf.yaml", head + bad, &d);
    EXPECT_NE(d.to_string().find(want), std::string::npos) << bad << d.to_string();
  }
}

TEST_F(ParserTest, FullWorkflowOutputsMapForm) {
  Workflow wf = parse_ok(kFull);
  const Stage* s = wf.find_stage("report");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->host, "laptop");
  EXPECT_EQ(s->needs, (std::vector<std::string>{"score", "train"}));
  EXPECT_EQ(s->retry_on, (std::vector<int>{1}));
  ASSERT_EQ(s->outputs.size(), 2u);
  EXPECT_EQ(s->outputs[0].name, "summary");
  ASSERT_TRUE(s->outputs[0].value.has_value());
  EXPECT_EQ(s->outputs[0].value->value, "${{ stages.score.outputs.speedup }}");
  EXPECT_EQ(s->outputs[1].name, "log");
  EXPECT_FALSE(s->outputs[1].value.has_value());  // `log:` alone: written to $FERRY_OUTPUT
}

TEST_F(ParserTest, DefaultsOfAMinimalWorkflow) {
  Workflow wf = parse_ok("name: tiny\nstages:\n  hello:\n    run: echo hi\n");
  ASSERT_EQ(wf.stages.size(), 1u);
  const Stage& s = wf.stages[0];
  EXPECT_EQ(s.kind, StageKind::kCommand);
  EXPECT_DOUBLE_EQ(s.timeout_s, 0);
  EXPECT_EQ(s.retries, 0);
  EXPECT_DOUBLE_EQ(s.retry_backoff_s, 1);
  EXPECT_TRUE(s.retry_on.empty());
  EXPECT_TRUE(s.cwd.empty());
  EXPECT_TRUE(s.env.empty());
  EXPECT_TRUE(s.outputs.empty());
  EXPECT_TRUE(wf.params.empty());
}

TEST_F(ParserTest, ImplicitLocalHostWhenHostsIsAbsent) {
  Workflow wf = parse_ok("name: tiny\nstages:\n  a:\n    run: echo a\n  b:\n    run: echo b\n    needs: a\n");
  ASSERT_EQ(wf.hosts.size(), 1u);
  EXPECT_EQ(wf.hosts[0].name, "local");
  EXPECT_EQ(wf.hosts[0].transport(), Transport::kLocal);
  EXPECT_TRUE(wf.hosts[0].workdir.empty());
  EXPECT_EQ(wf.stages[0].host, "local");
  EXPECT_EQ(wf.stages[1].host, "local");
}

TEST_F(ParserTest, ImplicitLocalHostWhenHostsIsEmpty) {
  Workflow wf = parse_ok("name: tiny\nhosts:\nstages:\n  a:\n    run: echo a\n");
  ASSERT_EQ(wf.hosts.size(), 1u);
  EXPECT_EQ(wf.hosts[0].name, "local");
  EXPECT_EQ(wf.stages[0].host, "local");
}

TEST_F(ParserTest, StagesDefaultToTheOnlyHost) {
  Workflow wf = parse_ok(
      "name: one\nhosts:\n  box:\n    transport: ssh\n    address: 10.0.0.1\n"
      "stages:\n  a:\n    run: echo a\n  b:\n    run: echo b\n    host: box\n");
  ASSERT_EQ(wf.hosts.size(), 1u);
  EXPECT_EQ(wf.hosts[0].name, "box");
  EXPECT_EQ(wf.stages[0].host, "box");
  EXPECT_EQ(wf.stages[0].host_at.line, 0);  // not written: filled in
  EXPECT_EQ(wf.stages[1].host, "box");
}

TEST_F(ParserTest, BareHostNameIsALocalHostWithDefaults) {
  Workflow wf = parse_ok("name: two\nhosts:\n  a:\n  b:\nstages:\n  s:\n    host: b\n    run: echo\n");
  ASSERT_EQ(wf.hosts.size(), 2u);
  EXPECT_EQ(wf.hosts[0].transport(), Transport::kLocal);
  EXPECT_EQ(wf.hosts[1].name, "b");
  EXPECT_EQ(wf.stages[0].host, "b");
}

TEST_F(ParserTest, NeedsAcceptsANameOrAList) {
  Workflow wf = parse_ok(
      "name: n\nstages:\n  a:\n    run: x\n  b:\n    run: x\n    needs: a\n"
      "  c:\n    run: x\n    needs:\n      - a\n      - b\n  d:\n    run: x\n    needs: []\n");
  EXPECT_EQ(wf.stages[1].needs, (std::vector<std::string>{"a"}));
  EXPECT_EQ(wf.stages[2].needs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(wf.stages[2].needs_at[1].line, 12);
  EXPECT_EQ(wf.stages[2].needs_at[1].column, 9);
  EXPECT_TRUE(wf.stages[3].needs.empty());
}

TEST_F(ParserTest, TemplatesMayUseOutputsOfIndirectNeeds) {
  parse_ok(
      "name: n\nstages:\n  a:\n    run: x\n    outputs: [o]\n  b:\n    run: x\n    needs: a\n"
      "  c:\n    run: echo ${{ stages.a.outputs.o }}\n    needs: b\n");
}

TEST_F(ParserTest, SlurmHostAndStageOptionsAndNamedRetryCauses) {
  Workflow wf = parse_ok(R"(name: sl
hosts:
  cluster:
    transport: ssh
    address: login1
    scheduler: slurm
    slurm: {partition: gpu, account: proj42, options: [--constraint=h100]}
stages:
  train:
    run: python train.py
    timeout: 90m
    retries: 2
    retry_on: [75, TIMEOUT, NODE_FAIL]
    slurm:
      partition: gpu-long
      cpus: 8
      mem: 64G
      gres: gpu:a100:2
      qos: high
      time: 2h
      options: --exclusive
)");
  const Host& h = wf.hosts[0];
  EXPECT_EQ(h.scheduler, Scheduler::kSlurm);
  EXPECT_EQ(h.slurm.partition, "gpu");
  EXPECT_EQ(h.slurm.extra, std::vector<std::string>{"--constraint=h100"});
  const Stage& s = wf.stages[0];
  EXPECT_EQ(s.retry_on, std::vector<int>{75});
  EXPECT_EQ(s.retry_on_causes, (std::vector<std::string>{"TIMEOUT", "NODE_FAIL"}));
  EXPECT_EQ(s.slurm.partition, "gpu-long");
  EXPECT_EQ(s.slurm.cpus, 8);
  EXPECT_EQ(s.slurm.mem, "64G");
  EXPECT_EQ(s.slurm.gres, "gpu:a100:2");
  EXPECT_EQ(s.slurm.time_s, 7200);
  EXPECT_EQ(s.slurm.at.line, 14);
  SlurmOptions m = merge_slurm(h.slurm, s.slurm);
  EXPECT_EQ(m.partition, "gpu-long");
  EXPECT_EQ(m.account, "proj42");
  EXPECT_EQ(m.extra, (std::vector<std::string>{"--constraint=h100", "--exclusive"}));
}

// sbatch reads flags with getopt_long: an abbreviation of a long flag and a word of
// short options set the flag they stand for (review-4 P8).
TEST_F(ParserTest, SlurmOwnedFlagsAreFoundAsSbatchReadsThem) {
  for (const char* flag : {"--outp=x", "--chd=/tmp", "--exp=NONE", "--job=n", "--no-r", "--open=truncate", "-vo x",
                           "-vvJname", "-Hv", "-sD/tmp", "--output", "-o", "-Jname", "--workdir=/tmp", "--=x", "--"}) {
    EXPECT_NE(slurm_extra_problem(flag), "") << flag;
  }
  EXPECT_NE(slurm_extra_problem("--outp=x").find("sets --output (sbatch reads '--outp' as --output)"),
            std::string::npos)
      << slurm_extra_problem("--outp=x");
  EXPECT_NE(slurm_extra_problem("-vo x").find("sets -o"), std::string::npos);
  // Whole flags that are not ferry's, abbreviations that cannot be one, and short
  // options whose value holds an owned letter.
  for (const char* flag :
       {"--constraint=h100", "--exclusive", "--export-file=f", "--wait-all-nodes=1", "--part=gpu", "--con=h100",
        "--mail-type=END", "-v", "-vv", "-C h100", "-pJob", "-t10", "-x node-Jo", "--wckey=x", "--signal=B:USR1@60"}) {
    EXPECT_EQ(slurm_extra_problem(flag), "") << flag;
  }
}

TEST_F(ParserTest, HelloExampleIsValid) {
  auto wf = load_workflow(FERRY_SOURCE_DIR "/examples/hello/workflow.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  EXPECT_EQ(wf->name, "hello");
  EXPECT_EQ(wf->hosts.size(), 2u);
  EXPECT_EQ(wf->stages.size(), 3u);
}

TEST_F(ParserTest, LoadingAMissingFileIsNotFound) {
  auto wf = load_workflow("/nonexistent/ferry/workflow.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_EQ(wf.status().code(), StatusCode::kNotFound);
  EXPECT_NE(wf.status().message().find("/nonexistent/ferry/workflow.yaml"), std::string::npos);
}

TEST_F(ParserTest, ErrorsAreListedOnePerLineSortedByPlace) {
  auto r = parse_workflow("bad.yaml", "name: x\nstages:\n  b:\n    run: x\n    needs: [zz]\n  a:\n    rum: x\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "bad.yaml:5:13: stage 'b' needs unknown stage 'zz'\n"
            "bad.yaml:7:5: unknown key 'rum' in stage 'a' (kind command) (did you mean 'run'?)");
}

// Inputs that are legal YAML but odd, or not YAML at all: each must give
// diagnostics, never a crash. (Run this binary under ASan to make that strong:
// the key iteration once kept a reference into a dead temporary.)
TEST_F(ParserTest, OddInputIsReportedNotCrashedOn) {
  for (const char* text : {
           "name: x\nstages: &s\n  a: *s\n",                              // alias to the enclosing map
           "name: x\nbase: &b {run: echo}\nstages:\n  a:\n    <<: *b\n",  // merge keys are not special
           "name: x\nstages:\n  a:\n    run: *nope\n",                    // undefined alias
           "? [a, b]\n: c\nname: x\nstages: {a: {run: x}}\n",             // a list as a key
           "name: x\nstages:\n  a:\n    run: echo\n    needs: [~, '', [b]]\n",
           "name: x\nstages:\n  a:\n    run: |\n      echo ${{ params.x }}\n    env:\n      A: ${{ params.y }}\n",
           "name: [x]\nparams: [a]\nhosts: x\nstages: x\n",
           "name: x\nhosts:\n  h: [1]\nstages:\n  a: [1]\n  b: 3\n",
           "name: x\nstages:\n  a:\n    kind: [copy]\n    outputs: 5\n    gate: 1\n    retry_on: {a: 1}\n",
           "\t\x01\xff: [\n",
           "name: x\nstages:\n  a:\n    run: x\n    timeout: 99999999999999999999999h\n    retries: "
           "99999999999999999999\n",
       }) {
    Diagnostics d("odd.yaml");
    parse_workflow_collecting("odd.yaml", text, &d);
    EXPECT_FALSE(d.empty()) << text;
    for (const auto& g : d.list()) EXPECT_GT(g.at.line, 0) << g.message << "\nin\n" << text;
  }
}

TEST_F(ParserTest, EmptyValueIsReportedAtItsKey) {
  Diagnostics d("wf.yaml");
  parse_workflow_collecting("wf.yaml", "name: x\nstages:\n  a:\n    cwd:\n    run: echo\n", &d);
  ASSERT_EQ(d.size(), 1u) << d.to_string();
  EXPECT_EQ(d.to_string(), "wf.yaml:4:5: 'cwd' must be a scalar, not nothing\n");
}

TEST(ParamOverrideTest, ReplacesDefaults) {
  auto wf = parse_workflow("wf.yaml", "name: p\nparams:\n  lr: \"0.1\"\n  steps: 10\nstages:\n  a:\n    run: x\n");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  Status s = apply_param_overrides(&*wf, {{"lr", "0.5"}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(wf->find_param("lr")->default_value, "0.5");
  EXPECT_EQ(wf->find_param("steps")->default_value, "10");
  EXPECT_TRUE(apply_param_overrides(&*wf, {}).ok());
  EXPECT_TRUE(apply_param_overrides(&*wf, {{"steps", ""}}).ok());
  EXPECT_EQ(wf->find_param("steps")->default_value, "");
}

TEST(ParamOverrideTest, UnknownParamIsAnErrorWithDidYouMean) {
  auto wf = parse_workflow("wf.yaml", "name: p\nparams:\n  learning_rate: \"0.1\"\nstages:\n  a:\n    run: x\n");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  Status s = apply_param_overrides(&*wf, {{"learning_rat", "0.5"}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "-p learning_rat: workflow 'p' has no param 'learning_rat' (did you mean 'learning_rate'?)");
  Status far = apply_param_overrides(&*wf, {{"zzz", "1"}});
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.message(), "-p zzz: workflow 'p' has no param 'zzz'");
  EXPECT_EQ(wf->find_param("learning_rate")->default_value, "0.1");
}

// `hosts:` on an eval: one shard stage per host, before the stage, which becomes
// their merge: it keeps its name, outputs and gate, and needs every shard.
TEST_F(ParserTest, AnEvalOverSeveralHostsBecomesItsShardsAndTheirMerge) {
  auto r = parse_workflow("wf.yaml", R"(name: split
hosts:
  a: {transport: local}
  b: {transport: local}
stages:
  train:
    run: echo
    host: a
  score:
    kind: eval
    needs: train
    hosts: [a, b, a]
    target: t
    drafter: d
    prompts: p
    retries: 2
    timeout: 1h
    gate: {min_tau: 2.5}
  after:
    run: echo ${{ stages.score.outputs.tau }}
    host: b
    needs: score
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<std::string> names;
  for (const auto& s : r->stages) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"train", "score-shard-1-of-3", "score-shard-2-of-3", "score-shard-3-of-3",
                                             "score", "after"}));
  for (int i = 0; i < 3; ++i) {
    const Stage* shard = r->find_stage(eval_shard_name("score", i, 3));
    ASSERT_NE(shard, nullptr);
    EXPECT_EQ(shard->kind, StageKind::kEval);
    EXPECT_EQ(shard->host, std::string(i == 1 ? "b" : "a"));
    EXPECT_EQ(shard->shard_index, i);
    EXPECT_EQ(shard->shard_count, 3);
    EXPECT_EQ(shard->shards_on_host, i == 1 ? 1 : 2);  // a runs two shards, b one
    EXPECT_EQ(shard->needs, std::vector<std::string>{"train"});
    EXPECT_EQ(shard->retries, 2);  // each shard is retried alone
    EXPECT_EQ(shard->timeout_s, 3600);
    EXPECT_FALSE(shard->gate.min_tau.has_value());  // a part is never judged
    EXPECT_TRUE(shard->hosts.empty());
  }
  const Stage* merge = r->find_stage("score");
  ASSERT_NE(merge, nullptr);
  EXPECT_TRUE(merge->host.empty());
  EXPECT_EQ(merge->shards,
            (std::vector<std::string>{"score-shard-1-of-3", "score-shard-2-of-3", "score-shard-3-of-3"}));
  EXPECT_EQ(merge->needs, merge->shards);
  EXPECT_EQ(merge->gate.min_tau, 2.5);
  EXPECT_EQ(merge->retries, 0);
}

}  // namespace
}  // namespace ferry::workflow
