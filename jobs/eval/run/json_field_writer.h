// Moved to base/json_field_writer.h (issue 44); kept while report_fields.h, being
// edited elsewhere, still includes it here.
#pragma once

#include "base/json_field_writer.h"
