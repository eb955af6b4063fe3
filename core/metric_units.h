#pragma once
// The units a metric's name ends in: how a command's memory report (`peak_rss_mib`) is read in
// bytes by the tuner (tuner/measured_memory.h), and how a name reads as a size
// (core/objective_direction.h).

#include <optional>
#include <string>

namespace slapo {

// A metric's value in bytes, from the unit its name ends in (_bytes, _kib, _kb, _mib, _mb, _gib,
// _gb); nullopt when the name carries no memory unit.
std::optional<double> metric_bytes(const std::string& name, double value);

}  // namespace slapo
