#pragma once
// Replaying a schedule from its text: Schedule::to_string() prints one primitive per line,
//   sch["h.0"].checkpoint()
//   sch["h.0.mlp.fc_in"].shard("weight", 0)
//   sch["h.1.attn"].replace(slapo::models::FusedQkvAttentionImpl)
// and replay() applies such lines to a fresh schedule of the same model, in order.

#include <functional>
#include <string>
#include <vector>

#include "schedule/language/primitives.h"
#include "schedule/language/schedule.h"

namespace slapo::schedule {

// A string argument as written in schedule text: double quotes; backslash, quote and newline
// escaped (\\, \", \n), so a multi-line pattern stays on its line.
std::string quote_argument(const std::string& s);

// Parses schedule text (blank lines and lines starting with # are skipped). Throws Error(kParse)
// naming the line number and what was expected.
std::vector<AppliedPrimitive> parse_schedule_text(const std::string& text);

// Applies `steps` to `sch` in order, each by its primitive's row in the table
// (schedule/language/primitives.h). `replace` steps need `factory`; without one they are an error
// naming the step. Every other error is the primitive's own.
void replay(Schedule& sch, const std::vector<AppliedPrimitive>& steps,
            const ReplaceFactory& factory = {});

}  // namespace slapo::schedule
