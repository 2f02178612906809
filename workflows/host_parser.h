// The `hosts:` section of a workflow: each host's link (its transport, and that
// transport's own keys read by one reader per link, a key of another transport
// refused), then its workdir, env and scheduler, checked as the parser checks
// stages (yaml_reader.h).
// Part of parsing a workflow (parser.h); one parse, one thread.
#pragma once

#include "workflows/model.h"
#include "workflows/yaml_reader.h"

namespace ferry::workflow {

/// Adds each host of `n` (the value of `hosts:`) to `wf->hosts`, reporting what is wrong
/// through `r`.
void parse_hosts(YamlReader& r, const YAML::Node& n, Workflow* wf);

}  // namespace ferry::workflow
