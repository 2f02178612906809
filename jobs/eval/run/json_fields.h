// Moved to base/json_fields.h (issue 44); kept while report_fields.h and
// shard_merge.cc, being edited elsewhere, still include it here.
#pragma once

#include "base/json_fields.h"
