// The small float32 path of tensor_ops (issue 45): plain loops in place of libtorch's
// op-by-op dispatch for small float32 tensors must give libtorch's values bit for bit
// (and the same layout where a later op could read it), since a float32 eval's report
// must not change: RMSNorm, q/k norm + RoPE, the residual add, a 1-row projection
// (the same sgemv_ call at::mv makes), SwiGLU's product, the KV cache's append, and a
// whole tiny Qwen3 target and DFlash drafter forward, decode steps and a verify; the
// Gated DeltaNet's conv and q/k step (cpu/gdn_conv_qk.h), alone and in a hybrid target.
// The threads a forward gets (ThreadsForWork) and the small-block cache are checked here too.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <vector>

#include "jobs/eval/cpu/compute_threads.h"
#include "jobs/eval/cpu/small_block_cache.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/models/gated_delta_net.h"
#include "jobs/eval/models/qwen35_target.h"
#include "jobs/eval/models/qwen3_target.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

template <typename F>
at::Tensor on_libtorch(F f) {
  return testing::with_kernels_off(set_small_f32_enabled, f);
}

// Bit for bit (NaN never arises here), with the same sizes and strides.
void expect_identical(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_EQ(got.strides(), want.strides()) << what;
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  EXPECT_TRUE(at::equal(got, want)) << what << ": max difference " << (got - want).abs().max().item<double>();
}

// Two runs' outputs, each bit for bit.
void expect_runs_identical(const std::vector<at::Tensor>& fast, const std::vector<at::Tensor>& slow,
                           const std::string& what) {
  ASSERT_EQ(fast.size(), slow.size()) << what;
  for (size_t i = 0; i < fast.size(); ++i) {
    ASSERT_EQ(fast[i].sizes(), slow[i].sizes()) << what << " output " << i;
    EXPECT_TRUE(at::equal(fast[i], slow[i]))
        << what << " output " << i << ": max difference " << (fast[i] - slow[i]).abs().max().item<double>();
  }
}

// A 17-token prompt, 4 decode steps, a verify of 16, a rollback to `crop_to` and a step:
// every logits and captured features, with the prompt's and the verify's outputs.
struct DecodeRun {
  std::vector<at::Tensor> outputs;
  TargetModel::Output prompt, verify;
};
DecodeRun decode_run(TargetModel& target, const std::vector<int64_t>& capture, int64_t crop_to) {
  DecodeRun r;
  target.reserve(64);
  r.prompt = target.forward(at::arange(3, 20, at::kLong), capture);
  r.outputs = {r.prompt.logits, r.prompt.features};
  for (int64_t step = 0; step < 4; ++step) {
    TargetModel::Output o = target.forward(at::full({1}, 11 + step, at::kLong), capture);
    r.outputs.push_back(o.logits);
    r.outputs.push_back(o.features);
  }
  r.verify = target.forward(at::arange(30, 46, at::kLong), capture);
  r.outputs.push_back(r.verify.logits);
  target.crop(crop_to);
  r.outputs.push_back(target.forward(at::full({1}, 5, at::kLong), capture).logits);
  return r;
}

class SmallFloat32Test : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(45); }
};

TEST_F(SmallFloat32Test, RmsNormIsLibtorchsBitForBit) {
  const std::vector<std::vector<int64_t>> shapes = {{1, 64},
                                                    {16, 64},
                                                    {1, 4, 16},
                                                    {16, 2, 16},
                                                    {1, 1024},
                                                    {16, 1024},
                                                    {3, 96},
                                                    {5, 1, 128},
                                                    {2, 37},
                                                    // many rows of widths that are not powers of two: the
                                                    // mean's division must round as libtorch's does
                                                    {150, 96},
                                                    {400, 37},
                                                    {16, 1000}};
  for (const auto& shape : shapes) {
    const at::Tensor x = at::randn(shape) * 3;
    const at::Tensor w = 1 + 0.2 * at::randn({shape.back()});
    for (double eps : {1e-6, 1e-5}) {
      expect_identical(rms_norm(x, w, eps), on_libtorch([&] { return rms_norm(x, w, eps); }),
                       "rms_norm " + std::to_string(shape.back()));
    }
  }
}

TEST_F(SmallFloat32Test, NormRopeHeadsIsLibtorchsBitForBitAndLaidOutAlike) {
  for (int64_t hd : {16, 64, 128}) {
    RopeCache cache(hd, 10000.0, {});
    for (int64_t t : {1, 5, 16}) {
      for (int64_t heads : {1, 2, 4}) {
        const at::Tensor x = at::randn({t, heads * hd}).view({t, heads, hd});  // a projection's output
        const at::Tensor w = 1 + 0.2 * at::randn({hd});
        const RopeTables rope = cache.at(37, t);
        const std::string what =
            "hd " + std::to_string(hd) + " t " + std::to_string(t) + " heads " + std::to_string(heads);
        expect_identical(norm_rope_heads(x, w, 1e-6, rope),
                         on_libtorch([&] { return norm_rope_heads(x, w, 1e-6, rope); }), what);
      }
    }
  }
}

TEST_F(SmallFloat32Test, ResidualAddAndSwigluAreLibtorchsBitForBit) {
  for (int64_t t : {1, 16}) {
    const at::Tensor x = at::randn({t, 64}), y = at::randn({t, 64});
    expect_identical(residual_add(x, y), x + y, "add");
    const at::Tensor gate = at::randn({128, 64}) * 0.2, up = at::randn({128, 64}) * 0.2, down = at::randn({64, 128});
    expect_identical(swiglu(x, gate, up, down), on_libtorch([&] { return swiglu(x, gate, up, down); }), "swiglu");
  }
}

TEST_F(SmallFloat32Test, OneRowProjectionIsAtMvBitForBit) {
  // The tiny models' widths, a head, odd sizes, the dense shape's.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 64},  {32, 64}, {128, 64},    {64, 128},
                                                           {512, 64}, {37, 53}, {1000, 1024}, {4096, 1024},
                                                           {1, 64},   {64, 1},  {3, 5000}};
  for (const auto& [n, k] : shapes) {
    const at::Tensor x = at::randn({1, k}), w = at::randn({n, k});
    const at::Tensor got = project(x, w);
    expect_identical(got, on_libtorch([&] { return project(x, w); }), std::to_string(n) + "x" + std::to_string(k));
    expect_identical(got, at::mv(w, x.select(0, 0)).unsqueeze(0), "mv");
  }
}

TEST_F(SmallFloat32Test, KvCacheAppendCopiesWhatCopyWould) {
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    KvCache fast, slow;
    for (int64_t t : {5, 1, 16, 1}) {
      const at::Tensor k = at::randn({t, 2, 16}).to(dtype).transpose(0, 1);  // [heads, T, hd], strided
      const at::Tensor v = at::randn({2, t, 16}).to(dtype);
      fast.append(k, v);
      set_small_f32_enabled(false);
      slow.append(k, v);
      set_small_f32_enabled(true);
    }
    EXPECT_TRUE(at::equal(fast.keys(), slow.keys()));
    EXPECT_TRUE(at::equal(fast.values(), slow.values()));
  }
}

// A whole tiny target (and drafter): prefill, decode steps and a verify with crops give
// libtorch's logits and features bit for bit.
TEST_F(SmallFloat32Test, TinyTargetAndDrafterAreLibtorchsBitForBit) {
  testing::ScratchDir dir("small-f32");
  TinyTargetSpec spec = testing::random_target_spec();
  spec.layers = 4;
  ASSERT_TRUE(write_tiny_target(dir / "target", spec, {}).ok());
  ASSERT_TRUE(write_tiny_drafter(dir / "drafter", testing::random_drafter_spec(), {}).ok());
  auto run = [&](bool small) {
    set_small_f32_enabled(small);
    auto target = Qwen3Target::load(dir / "target", {}, nullptr);
    auto drafter = DFlashDrafter::load(dir / "drafter", spec.hidden, {}, nullptr);
    EXPECT_TRUE(target.ok() && drafter.ok());
    DecodeRun r = decode_run(**target, {1, 3}, 23);
    std::vector<at::Tensor>& out = r.outputs;
    const TargetModel::Output &prompt = r.prompt, &verify = r.verify;
    const at::Tensor block = (*target)->embed(at::full({16}, 0, at::kLong));
    out.push_back((*drafter)->forward(prompt.features, block));
    out.push_back((*drafter)->forward(verify.features.narrow(0, 0, 3), block));
    set_small_f32_enabled(true);
    return out;
  };
  expect_runs_identical(run(true), run(false), "");
}

// Qwen3.5's (1 + w) RMSNorm on float32 and BF16 rows, contiguous or a q head narrowed
// from its gate: libtorch's values bit for bit, laid out alike (contiguous).
TEST_F(SmallFloat32Test, RmsNormOnePlusIsLibtorchsBitForBit) {
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{1, 64}, {16, 64}, {1, 1024}, {3, 96}, {2, 37}}) {
      const at::Tensor x = (at::randn(shape) * 3).to(dtype);
      const at::Tensor w = 1 + 0.2 * at::randn({shape.back()});
      expect_identical(rms_norm_one_plus(x, w, 1e-6), on_libtorch([&] { return rms_norm_one_plus(x, w, 1e-6); }),
                       "rms_norm_one_plus " + std::to_string(shape.back()));
    }
    for (const int64_t t : {1, 3}) {
      const at::Tensor qg = (at::randn({t, 4, 2 * 32}) * 3).to(dtype);  // [T, heads, q | gate]
      const at::Tensor q = qg.narrow(2, 0, 32);
      const at::Tensor w = 1 + 0.2 * at::randn({32});
      expect_identical(rms_norm_one_plus(q, w, 1e-6), on_libtorch([&] { return rms_norm_one_plus(q, w, 1e-6); }),
                       "rms_norm_one_plus of a narrowed q");
      const at::Tensor k = (at::randn({t, 2, 32}) * 3).to(dtype);
      expect_identical(rms_norm_one_plus(k, w, 1e-6), on_libtorch([&] { return rms_norm_one_plus(k, w, 1e-6); }),
                       "rms_norm_one_plus of k heads");
    }
  }
}

// A Gated DeltaNet layer (2 key / 4 value heads, so q and k repeat) over steps of 1
// and 3 tokens from a carried state, its float32 or BF16 projections: the loops'
// output, state and tape are libtorch's bit for bit.
TEST_F(SmallFloat32Test, GdnConvQkIsLibtorchsBitForBit) {
  GdnDims d;
  d.hidden = 48;
  d.key_heads = 2;
  d.value_heads = 4;
  d.key_dim = 16;
  d.value_dim = 32;
  const int64_t c = d.conv_channels(), vd = d.value_heads * d.value_dim;
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    GdnWeights w;
    w.in_qkv = (at::randn({c, d.hidden}) * 0.3).to(dtype);
    w.in_z = (at::randn({vd, d.hidden}) * 0.3).to(dtype);
    w.in_b = (at::randn({d.value_heads, d.hidden}) * 0.3).to(dtype);
    w.in_a = (at::randn({d.value_heads, d.hidden}) * 0.3).to(dtype);
    w.conv = at::randn({d.conv_kernel, c}) * 0.5;
    w.neg_a = -at::exp(at::randn({d.value_heads}) * 0.5);
    w.dt_bias = at::randn({d.value_heads}) * 0.5;
    w.norm = (1 + 0.2 * at::randn({d.value_dim})).to(dtype);
    w.out = (at::randn({d.hidden, vd}) * 0.1).to(dtype);
    const std::vector<at::Tensor> inputs = {at::randn({1, d.hidden}).to(dtype), at::randn({3, d.hidden}).to(dtype),
                                            at::randn({1, d.hidden}).to(dtype), at::randn({1, d.hidden}).to(dtype)};
    auto run = [&](bool small) {
      set_small_f32_enabled(small);
      GdnState st = gdn_initial_state(d, at::kCPU);
      std::vector<at::Tensor> out;
      for (const at::Tensor& x : inputs) {
        out.push_back(gdn_forward(d, w, x, &st));
        for (const at::Tensor& t : {st.state, st.conv, st.window, st.k, st.v, st.decay, st.beta}) out.push_back(t);
      }
      gdn_rollback(&st, 0);
      out.push_back(st.conv);
      set_small_f32_enabled(true);
      return out;
    };
    expect_runs_identical(run(true), run(false), at::toString(dtype));
  }
}

// A whole tiny float32 hybrid (Gated DeltaNet and attention layers): prefill, decode
// steps, a verify and a rollback give libtorch's logits bit for bit.
TEST_F(SmallFloat32Test, TinyHybridTargetIsLibtorchsBitForBit) {
  testing::ScratchDir dir("small-f32-hybrid");
  ASSERT_TRUE(write_tiny_target(dir / "target", testing::hybrid_target_spec(), {}).ok());
  auto run = [&](bool small) {
    set_small_f32_enabled(small);
    auto target = Qwen35Target::load(dir / "target", {}, nullptr);
    EXPECT_TRUE(target.ok());
    DecodeRun r = decode_run(**target, {1, 2}, 25);  // a rollback the GDN layers replay
    set_small_f32_enabled(true);
    return r.outputs;
  };
  expect_runs_identical(run(true), run(false), "");
}

TEST(SmallBlockCacheTest, AFreedSmallBlockIsTakenBackAlignedAndLargeOnesAreNot) {
  use_small_block_cache();
  use_small_block_cache();  // once only
  void* first = nullptr;
  {
    at::Tensor t = at::empty({100}, at::kFloat);  // 400 bytes: the 512-byte class
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    t.fill_(3);
  }
  const size_t cached = small_block_cache_bytes();
  EXPECT_GE(cached, 512u);
  {
    at::Tensor t = at::empty({128}, at::kFloat);  // 512 bytes: the same class, taken back
    EXPECT_EQ(t.data_ptr(), first);
    EXPECT_EQ(small_block_cache_bytes(), cached - 512);
  }
  {
    at::Tensor big = at::zeros({int64_t{1} << 20}, at::kFloat);  // 4 MiB: libtorch's own allocator
    EXPECT_EQ(big.sum().item<float>(), 0.0f);
  }
  // The 4 MiB block was not kept (the sum's own small result may have been).
  EXPECT_LT(small_block_cache_bytes(), cached + kSmallBlockBytes);
  EXPECT_LE(small_block_cache_bytes(), kSmallBlockCacheBytes);
}

TEST(ThreadsForWorkTest, ASmallForwardRunsOnOneThreadAndTheCountComesBack) {
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  {
    ThreadsForWork small(min_split_macs() - 1);
    EXPECT_TRUE(small.single());
    EXPECT_EQ(at::get_num_threads(), 1);
    ThreadsForWork nested(0);  // already one thread: nothing to change
    EXPECT_FALSE(nested.single());
  }
  EXPECT_EQ(at::get_num_threads(), 2);
  {
    ThreadsForWork large(min_split_macs());
    EXPECT_FALSE(large.single());
    EXPECT_EQ(at::get_num_threads(), 2);
  }
  const int64_t threshold = min_split_macs();
  set_min_split_macs(0);  // every forward splits, as before issue 45
  {
    ThreadsForWork any(1);
    EXPECT_FALSE(any.single());
  }
  set_min_split_macs(threshold);
  at::set_num_threads(before);
}

}  // namespace
}  // namespace ferry::eval
