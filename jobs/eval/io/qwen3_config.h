// The Qwen3 dense target's config.json (`qwen3`; a VLM wrapper such as `qwen3_vl`
// yields its text backbone): every layer full attention, no sliding window. The
// shared dimensions are all a Qwen3 target needs, so it reads into a DecoderConfig.
// What the engine cannot run faithfully is refused with the file and the field named.
// No libtorch; any thread.
#pragma once

#include <string>

#include "base/status.h"
#include "jobs/eval/io/decoder_config.h"

namespace ferry::eval {

/// Reads `<folder>/config.json` as a Qwen3 dense target.
Result<DecoderConfig> load_qwen3_config(const std::string& folder);

}  // namespace ferry::eval
