// x @ w^T for BF16 weights repacked once, at load, into the layout vdpbf16ps wants, so a
// block of rows (a verify, a prefill) runs at the cores' arithmetic speed and a single
// row (a decode step) at their read speed, from the same single copy of the weights.
//
// Layout: w [N, K] becomes [N / 16, K / 2, 32]: panels of 16 output columns; in a panel,
// for each pair of inputs (2j, 2j+1), the 16 columns' pairs side by side — one 64-byte
// vector. A step of the kernel loads that vector once and multiplies it into 16 float32
// sums (one output column each, no horizontal sums) for every row of x, the row's
// pair broadcast; a tile of up to 16 rows keeps its sums in registers for the whole K.
// Why not the checkpoint's layout: there each output is a dot product along K, reduced
// across lanes at the end, and 16 rows need 16 x-vector loads per weight vector; both
// cost as much as the multiply-adds at K = 1,024 (oneDNN repacks for the same reason).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ferry::eval {

/// Output columns in a panel of a packed weight (one float32 vector of sums).
constexpr int64_t kBf16PanelColumns = 16;

/// Whether pack_bf16_weight() takes w: BF16 [N, K] contiguous on the CPU, K even, N a
/// multiple of kBf16PanelColumns (any N with `padded`: see pack_bf16_weight), and the
/// BF16 kernel supported and enabled (read at load: a weight packed stays packed).
/// Others stay as they are (bf16_linear / libtorch).
bool bf16_weight_packable(const at::Tensor& w, bool padded = false);

/// Panels that hold N output columns: N / 16 rounded up.
int64_t bf16_panels_for(int64_t n);

/// w [N, K] -> [panels, K / 2, 32] as above (a new tensor; the caller drops w). Where N
/// is not a multiple of 16 the last panel's missing columns are zeros, and a product
/// has bf16_panels_for(N) * 16 columns, the last ones 0: the caller narrows it to N.
at::Tensor pack_bf16_weight(const at::Tensor& w);
/// The same into `panels` ([bf16_panels_for(rows), K / 2, 32], contiguous), for packing
/// a weight a slice of rows at a time (WeightLoader releases each slice's pages as it goes).
void pack_bf16_panels(const at::Tensor& rows, const at::Tensor& panels);

/// Whether w is a pack_bf16_weight() result: BF16 [panels, K / 2, 32].
bool is_packed_bf16_weight(const at::Tensor& w);

/// x [..., K] BF16, any number of rows, against a packed w of [N, K] -> [..., N] BF16,
/// each output the float32 sum of its K products rounded once. Output columns are split
/// over libtorch's threads; rows beyond 16 reuse each panel from cache.
at::Tensor packed_bf16_linear(const at::Tensor& x, const at::Tensor& packed);

// The kernel's two steps, for callers that pack their own operands per call (attention:
// a group's query rows against its keys, 16 keys to a panel).

/// `count` (1-16) rows of `pair_count` BF16 pairs, row m at rows + m * stride (in BF16
/// values), made pair-major as bf16_panel_tile() reads them: dst[2 (j count + m) + e] is
/// row m's value 2j + e. 16 rows of keys so laid out are also a panel: the keys are
/// its 16 columns. Needs bf16_kernel_supported() (16 rows at an even stride go by
/// transposes in registers).
void bf16_interleave_rows(const c10::BFloat16* rows, int64_t count, int64_t stride, int64_t pair_count,
                          c10::BFloat16* dst);
/// out[m * ldo + c] = row m of `pairs` (count rows, bf16_interleave_rows' layout) times
/// column c of the panel, for the panel's 16 columns: float32 sums rounded once to BF16.
/// Needs bf16_kernel_supported().
void bf16_panel_tile(const c10::BFloat16* pairs, int64_t count, const c10::BFloat16* panel, int64_t pair_count,
                     c10::BFloat16* out, int64_t ldo);
/// The same x against several packed weights of the same K, in one parallel region (a
/// region costs every thread a wake-up: a decode step's q/k/v share one, gate/up one).
std::vector<at::Tensor> packed_bf16_linear_all(const at::Tensor& x, const std::vector<at::Tensor>& weights);

}  // namespace ferry::eval
