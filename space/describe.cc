// CompiledSpace::describe(): the analysis, readable (`slapo-tune space show`).

#include <sstream>

#include "space/compiled_space.h"
#include "space/compiled_space_impl.h"

namespace slapo::space {

using namespace detail;  // the nest's data (compiled_space_impl.h)
using slapo::to_string;

std::string CompiledSpace::describe() const {
  const Impl& m = *impl_;
  std::ostringstream out;
  out << "space " << m.space.origin << "\n";
  if (!m.space.parameters.empty()) {
    out << "parameters:";
    for (const auto& p : m.space.parameters) out << " " << p.name << "=" << to_string(p.value);
    out << "\n";
  }
  auto slot_name = [&](int slot) { return m.levels[slot].info.name; };
  auto format_bound = [&](const Level& level, const Bound& b) {
    // x ≥ -(c + Σ a_j x_j)/a  printed as "x >= 4 + cut1" etc.
    std::ostringstream s;
    s << level.info.name << (b.lower ? " >= " : " <= ");
    bool first = true;
    for (const auto& [slot, coef] : b.terms) {
      const double k = -coef / b.a;
      if (k == 0) continue;
      s << (first ? (k < 0 ? "-" : "") : (k < 0 ? " - " : " + "));
      if (std::fabs(k) != 1) s << to_string(Value(std::fabs(k))) << "*";
      s << slot_name(slot);
      first = false;
    }
    const double c = -b.c / b.a;
    if (first)
      s << to_string(Value(c));
    else if (c != 0)
      s << (c < 0 ? " - " : " + ") << to_string(Value(std::fabs(c)));
    std::string text = s.str();
    // Integral coefficients print without a trailing ".0".
    for (size_t pos; (pos = text.find(".0*")) != std::string::npos;) text.erase(pos, 2);
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0)
      text.resize(text.size() - 2);
    const std::string from =
        b.origin >= 0 ? m.constraints[m.parts[b.origin].constraint].name : "projected";
    return text + "   (" + from + ")";
  };
  out << "loop order (" << m.n() << " knobs, outermost first):\n";
  for (size_t k = 0; k < m.n(); ++k) {
    const Level& level = m.levels[k];
    out << "  " << k + 1 << ". " << level.info.name << "  " << to_string(level.info.kind);
    if (level.is_cuts) {
      out << ": " << level.decl.stages << " stages over " << level.decl.layers << " layers, "
          << level.decl.min_stage << ".." << level.decl.max_stage << " layers each";
    } else {
      out << " {";
      const size_t shown = std::min<size_t>(level.info.domain.size(), 8);
      for (size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << to_string(level.info.domain[i]);
      if (static_cast<int64_t>(shown) < level.domain.n) {
        out << ", ..., " << to_string(level.info.domain.back());
      }
      out << "} (" << level.domain.n << " values)";
    }
    if (level.info.mem != MemTrend::kNone) out << "  mem " << to_string(level.info.mem);
    out << "\n";
    for (const Bound& b : level.bounds) out << "       bound  " << format_bound(level, b) << "\n";
    for (const ParametricBound& pb : level.parametric) {
      out << "       bound  " << m.parts[pb.part].text << "   ("
          << m.constraints[m.parts[pb.part].constraint].name << "; solved for " << level.info.name
          << " once the knobs before are fixed)\n";
    }
    for (int t : level.tighten) {
      if (!m.parts[t].affine) continue;
      out << "       exact  " << m.parts[t].text << "   ("
          << m.constraints[m.parts[t].constraint].name
          << ", floating: re-checked at the range ends)\n";
    }
    for (int g : level.guards) {
      out << "       guard  " << m.parts[g].text << "   ("
          << m.constraints[m.parts[g].constraint].name << ")\n";
    }
    if (level.memoize) {
      out << "       counts memoized on {";
      for (size_t i = 0; i < level.deps.size(); ++i)
        out << (i ? ", " : "") << slot_name(level.deps[i]);
      out << "}\n";
    }
  }
  out << "constraints:\n";
  for (size_t c = 0; c < m.constraints.size(); ++c) {
    out << "  " << m.constraints[c].name << ": " << m.constraints[c].text << "\n";
    bool any = false;
    for (const Part& part : m.parts) {
      if (part.constraint != static_cast<int>(c)) continue;
      any = true;
      const int level = part.program.slots_read().back();
      bool parametric = false;
      for (const ParametricBound& pb : m.levels[level].parametric)
        parametric = parametric || &m.parts[pb.part] == &part;
      out << "       "
          << (part.affine  ? "affine"
              : parametric ? "bound "
                           : "guard ")
          << "  " << part.text << "   at " << m.levels[level].info.name << "\n";
    }
    if (!any) out << "       constant for these parameters\n";
  }
  if (m.projection_truncated)
    out << "note: projection stopped early (too many rows); guards still hold\n";
  if (m.empty) out << "empty: " << m.empty_reason << "\n";
  try {
    out << "size: " << size() << "\n";
  } catch (const Error& e) {
    out << "size: " << e.what() << "\n";
  }
  return out.str();
}

}  // namespace slapo::space
