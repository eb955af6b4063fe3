#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/noise_line.h"
#include "core/error.h"
#include "core/metrics.h"

namespace slapo::cli {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(double v, int digits = 4) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

// The width of a character of the figures' 12 px sans-serif text, as an axis label needs it: a
// little over a digit's (about 7.6 px; a comma's 3.8). Wide letters (m, W) need more: labels of
// long words may still touch.
constexpr double kCharWidthPx = 7.5;

// A knob's values in their natural order: numbers by value, others as first seen.
struct Axis {
  std::string knob;
  std::vector<Value> values;
  bool numeric = false;  // every value a number
  size_t index_of(const Value& v) const {
    return static_cast<size_t>(std::find(values.begin(), values.end(), v) - values.begin());
  }
};

Axis axis_of(const std::string& knob, const std::vector<db::TrialRecord>& trials) {
  Axis a{knob, {}};
  for (const auto& t : trials) {
    const Value* v = t.config.find(knob);
    if (v && std::find(a.values.begin(), a.values.end(), *v) == a.values.end())
      a.values.push_back(*v);
  }
  a.numeric =
      std::all_of(a.values.begin(), a.values.end(), [](const Value& v) { return is_number(v); });
  if (a.numeric) {
    std::sort(a.values.begin(), a.values.end(),
              [](const Value& x, const Value& y) { return as_number(x) < as_number(y); });
  }
  return a;
}

// Whether a trial was measured (not pruned before it ran, not interrupted by the user).
bool was_measured(const db::TrialRecord& t) {
  return t.result.status != TrialStatus::kPruned && t.result.status != TrialStatus::kInterrupted;
}

// Pale yellow to deep blue: t in [0, 1]. Never white: white is "not measured".
std::string color(double t) {
  const double lo[3] = {255, 237, 160}, hi[3] = {8, 48, 107};
  std::ostringstream s;
  s << "rgb(";
  for (int i = 0; i < 3; ++i) s << (i ? "," : "") << static_cast<int>(lo[i] + (hi[i] - lo[i]) * t);
  s << ")";
  return s.str();
}

struct Cell {
  std::optional<double> best;
  bool oom = false, pruned = false, failed = false;
};

std::string heat_map(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials,
                     const Axis& x, const Axis& y) {
  std::map<std::pair<size_t, size_t>, Cell> cells;
  for (const auto& t : trials) {
    const Value* vx = t.config.find(x.knob);
    const Value* vy = t.config.find(y.knob);
    if (!vx || !vy) continue;
    Cell& c = cells[{x.index_of(*vx), y.index_of(*vy)}];
    const TrialStatus s = t.result.status;
    if (s == TrialStatus::kOk && t.objective) {
      if (task.objective.better(t.ranking_objective(), c.best)) c.best = t.ranking_objective();
    } else if (s == TrialStatus::kOom) {
      c.oom = true;
    } else if (s == TrialStatus::kPruned) {
      c.pruned = true;
    } else {
      c.failed = true;
    }
  }
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& [k, c] : cells) {
    if (c.best) lo = std::min(lo, *c.best), hi = std::max(hi, *c.best);
  }
  const int cw = 84, ch = 34, left = 110, top = 30;
  const int width = left + cw * static_cast<int>(x.values.size()) + 20;
  const int height = top + ch * static_cast<int>(y.values.size()) + 50;
  std::ostringstream svg;
  svg << "<svg class='heat-map' xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='"
      << height << "' role='img'>\n";
  svg << "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>"
         "<line x1='0' y1='0' x2='0' y2='6' stroke='#c0392b' stroke-width='2'/></pattern></defs>\n";
  for (size_t j = 0; j < y.values.size(); ++j) {
    const int cy = top + ch * static_cast<int>(j);
    svg << "<text x='" << left - 8 << "' y='" << cy + ch / 2 + 4 << "' text-anchor='end'>"
        << escape(to_plain_string(y.values[j])) << "</text>\n";
    for (size_t i = 0; i < x.values.size(); ++i) {
      const int cx = left + cw * static_cast<int>(i);
      auto it = cells.find({i, j});
      std::string fill = "#ffffff", label, text_color = "#222", title;
      if (it != cells.end()) {
        const Cell& c = it->second;
        if (c.best) {
          const double t = hi > lo ? (*c.best - lo) / (hi - lo) : 1.0;
          fill = color(task.objective.minimize ? 1 - t : t);
          label = fmt(*c.best, 4);
          if ((task.objective.minimize ? 1 - t : t) > 0.55) text_color = "#fff";
          title = "best " + label;
        } else if (c.oom) {
          fill = "url(#hatch)", label = "OOM", title = "out of memory";
        } else if (c.pruned) {
          fill = "#d5d8dc", label = "pruned", title = "pruned: proven out of memory";
        } else {
          fill = "#f5b7b1", label = "failed", title = "failed";
        }
      } else {
        title = "not measured", label = "·", text_color = "#999";
      }
      const bool unmeasured = it == cells.end();
      svg << "<rect class='" << (unmeasured ? "unmeasured" : "cell") << "' x='" << cx << "' y='"
          << cy << "' width='" << cw - 2 << "' height='" << ch - 2 << "' fill='" << fill
          << "' stroke='#999'" << (unmeasured ? " stroke-dasharray='3 3'" : "") << "><title>"
          << escape(x.knob + "=" + to_plain_string(x.values[i]) + ", " + y.knob + "=" +
                    to_plain_string(y.values[j]) + ": " + title)
          << "</title></rect>\n";
      if (!label.empty()) {
        svg << "<text x='" << cx + cw / 2 - 1 << "' y='" << cy + ch / 2 + 4
            << "' text-anchor='middle' fill='" << text_color << "'>" << escape(label)
            << "</text>\n";
      }
    }
  }
  for (size_t i = 0; i < x.values.size(); ++i) {
    svg << "<text x='" << left + cw * static_cast<int>(i) + cw / 2 << "' y='"
        << top + ch * static_cast<int>(y.values.size()) + 18 << "' text-anchor='middle'>"
        << escape(to_plain_string(x.values[i])) << "</text>\n";
  }
  svg << "<text x='" << left + cw * static_cast<int>(x.values.size()) / 2 << "' y='" << height - 6
      << "' text-anchor='middle' font-weight='bold'>" << escape(x.knob) << "</text>\n";
  svg << "<text x='12' y='" << top - 12 << "' font-weight='bold'>" << escape(y.knob) << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

// The heat map's legend: the colour scale from the worst to the best measured value, and the marks.
std::string legend(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& t : trials) {
    if (t.result.status == TrialStatus::kOk && t.ranking_objective())
      lo = std::min(lo, *t.ranking_objective()), hi = std::max(hi, *t.ranking_objective());
  }
  std::ostringstream svg;
  svg << "<svg class='legend' xmlns='http://www.w3.org/2000/svg' width='760' height='56' "
         "role='img'>\n";
  if (std::isfinite(lo)) {
    const int steps = 20, x0 = 10, w = 12;
    for (int k = 0; k < steps; ++k) {
      const double t = k / static_cast<double>(steps - 1);  // worst to best
      svg << "<rect x='" << x0 + k * w << "' y='8' width='" << w << "' height='16' fill='"
          << color(t) << "'/>\n";
    }
    const double worst = task.objective.minimize ? hi : lo,
                 best = task.objective.minimize ? lo : hi;
    svg << "<text x='" << x0 << "' y='40'>" << fmt(worst) << " (worst)</text>\n";
    svg << "<text x='" << x0 + steps * w << "' y='40' text-anchor='end'>" << fmt(best)
        << " (best)</text>\n";
  }
  const struct {
    const char* fill;
    const char* label;
    bool dashed;
  } marks[] = {{"url(#legend-hatch)", "out of memory", false},
               {"#d5d8dc", "pruned", false},
               {"#f5b7b1", "failed", false},
               {"#ffffff", "not measured", true}};
  svg << "<defs><pattern id='legend-hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
         "patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='#c0392b' "
         "stroke-width='2'/></pattern></defs>\n";
  int x = 270;
  for (const auto& m : marks) {
    svg << "<rect x='" << x << "' y='8' width='16' height='16' fill='" << m.fill
        << "' stroke='#999'" << (m.dashed ? " stroke-dasharray='3 3'" : "") << "/><text x='"
        << x + 20 << "' y='21'>" << m.label << "</text>\n";
    x += 20 + 8 * static_cast<int>(std::string(m.label).size()) + 14;
  }
  svg << "</svg>\n";
  return svg.str();
}

// Seconds since the epoch of a UTC ISO 8601 time ("2026-11-23T17:39:24.012Z"); NaN when it is not.
double epoch_seconds(const std::string& iso) {
  std::tm tm{};
  double seconds = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &seconds) != 6)
    return NAN;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + seconds;
}

// Each measurement of each re-measured trial, by trial index (the first included).
std::map<int64_t, std::vector<double>> measurements_by_trial(const ReportData& data) {
  std::map<int64_t, std::vector<double>> out;
  for (const auto& t : data.trials) {
    if (t.remeasured > 0 && t.objective) out[t.index].push_back(*t.objective);
  }
  for (const auto& r : data.remeasurements) {
    if (r.objective && out.count(r.trial_index)) out[r.trial_index].push_back(*r.objective);
  }
  return out;
}

// One knob's panel: every ok trial's objective (the median where re-measured) against the knob's
// values, the spread of a re-measured trial's measurements as an error bar, the best per value.
std::string knob_panel(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials,
                       const Axis& axis, const std::map<int64_t, std::vector<double>>& spread,
                       double lo, double hi) {
  const int width = 300, height = 190, left = 56, right = 12, top = 22, bottom = 40;
  const double span = hi > lo ? hi - lo : 1;
  const auto px = [&](size_t i) {
    return left + (width - left - right) * (static_cast<double>(i) + 0.5) /
                      static_cast<double>(std::max<size_t>(axis.values.size(), 1));
  };
  const auto py = [&](double v) { return top + (height - top - bottom) * (1 - (v - lo) / span); };
  std::ostringstream svg;
  svg << "<svg class='knob-panel' xmlns='http://www.w3.org/2000/svg' width='" << width
      << "' height='" << height << "' role='img'>\n";
  svg << "<text x='" << left << "' y='14' font-weight='bold'>" << escape(axis.knob) << "</text>\n";
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width - left - right
      << "' height='" << height - top - bottom << "' fill='none' stroke='#bbb'/>\n";
  std::map<size_t, double> best;
  std::set<size_t> measured;
  for (const auto& t : trials) {
    const Value* v = t.config.find(axis.knob);
    if (!v) continue;
    const size_t i = axis.index_of(*v);
    if (was_measured(t)) measured.insert(i);
    if (t.result.status != TrialStatus::kOk || !t.ranking_objective()) continue;
    const double y = *t.ranking_objective();
    // A little horizontal jitter by trial index, so trials of one value do not hide each other.
    const double x = px(i) + static_cast<double>((t.index * 7) % 11 - 5) * 1.6;
    const auto it = spread.find(t.index);
    if (it != spread.end() && it->second.size() > 1) {
      const auto [mn, mx] = std::minmax_element(it->second.begin(), it->second.end());
      svg << "<line class='error-bar' x1='" << fmt(x, 6) << "' x2='" << fmt(x, 6) << "' y1='"
          << fmt(py(*mn), 6) << "' y2='" << fmt(py(*mx), 6) << "' stroke='#555'><title>trial "
          << t.index << ": " << it->second.size() << " measurements, " << fmt(*mn) << " to "
          << fmt(*mx) << "</title></line>\n";
    }
    svg << "<circle cx='" << fmt(x, 6) << "' cy='" << fmt(py(y), 6)
        << "' r='2.5' fill='#4a7fb0' fill-opacity='0.7'><title>trial " << t.index << ", "
        << escape(axis.knob) << " = " << escape(to_plain_string(*v)) << ": " << fmt(y)
        << "</title></circle>\n";
    if (!best.count(i) || task.objective.better(y, best[i])) best[i] = y;
  }
  for (const auto& [i, y] : best) {
    svg << "<line x1='" << fmt(px(i) - 10, 6) << "' x2='" << fmt(px(i) + 10, 6) << "' y1='"
        << fmt(py(y), 6) << "' y2='" << fmt(py(y), 6) << "' stroke='#08306b' stroke-width='2'/>\n";
  }
  // Every value is labelled where the labels fit side by side; else every k-th, k the fewest that
  // keeps them apart (a cut knob's values are many and long): a point's own title names its value.
  size_t widest = 1;
  for (const Value& v : axis.values) widest = std::max(widest, to_plain_string(v).size() + 1);
  const double slot =
      (width - left - right) / static_cast<double>(std::max<size_t>(axis.values.size(), 1));
  const size_t every =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(widest * kCharWidthPx / slot)));
  for (size_t i = 0; i < axis.values.size(); i += every) {
    svg << "<text class='tick' x='" << fmt(px(i), 6) << "' y='" << height - bottom + 14
        << "' text-anchor='middle' fill='" << (measured.count(i) ? "#222" : "#aaa") << "'>"
        << escape(to_plain_string(axis.values[i])) << (measured.count(i) ? "" : "?") << "</text>\n";
  }
  svg << "<text x='" << left - 4 << "' y='" << top + 8 << "' text-anchor='end'>" << fmt(hi)
      << "</text><text x='" << left - 4 << "' y='" << height - bottom << "' text-anchor='end'>"
      << fmt(lo) << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::string convergence(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials) {
  std::vector<const db::TrialRecord*> measured;
  for (const auto& t : trials) {
    if (was_measured(t)) measured.push_back(&t);
  }
  const int width = 640, height = 300, left = 70, right = 20, top = 20, bottom = 40;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto* t : measured) {
    if (t->objective) lo = std::min(lo, *t->objective), hi = std::max(hi, *t->objective);
  }
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' role='img'>\n";
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width - left - right
      << "' height='" << height - top - bottom << "' fill='none' stroke='#999'/>\n";
  if (!std::isfinite(lo)) {
    svg << "<text x='" << width / 2 << "' y='" << height / 2
        << "' text-anchor='middle'>no successful trial yet</text></svg>\n";
    return svg.str();
  }
  if (hi == lo) hi = lo + 1, lo = lo - 1;
  // Time: a trial at the moment it ended, in seconds since the first one started (by index when
  // the record has no readable times).
  std::vector<double> at(measured.size());
  double t0 = INFINITY, t_end = 0;
  for (const auto* t : measured) t0 = std::min(t0, epoch_seconds(t->started_at));
  bool timed = std::isfinite(t0);
  for (size_t i = 0; i < measured.size(); ++i) {
    at[i] = timed ? epoch_seconds(measured[i]->started_at) - t0 + measured[i]->duration_s
                  : static_cast<double>(i);
    if (!std::isfinite(at[i])) timed = false;
  }
  if (!timed)
    for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<double>(i);
  for (double a : at) t_end = std::max(t_end, a);
  if (t_end <= 0) t_end = 1;
  auto px = [&](size_t i) { return left + (width - left - right) * at[i] / t_end; };
  auto py = [&](double v) { return top + (height - top - bottom) * (1 - (v - lo) / (hi - lo)); };
  std::ostringstream line;
  std::optional<double> best;
  for (size_t i = 0; i < measured.size(); ++i) {
    const auto* t = measured[i];
    if (t->objective) {
      svg << "<circle cx='" << fmt(px(i), 6) << "' cy='" << fmt(py(*t->objective), 6)
          << "' r='3' fill='#7fb3d5'><title>trial " << t->index << ": " << fmt(*t->objective)
          << "</title></circle>\n";
      if (task.objective.better(t->objective, best)) best = t->objective;
    } else {
      const double x = px(i), y = height - bottom - 8;
      svg << "<path d='M" << fmt(x - 4, 6) << " " << fmt(y - 4, 6)
          << " l8 8 m0 -8 l-8 8' stroke='#c0392b' stroke-width='2'>"
          << "<title>trial " << t->index << ": " << to_string(t->result.status)
          << "</title></path>\n";
    }
    if (best) line << (line.tellp() == 0 ? "M" : " L") << fmt(px(i), 6) << " " << fmt(py(*best), 6);
  }
  svg << "<path d='" << line.str() << "' fill='none' stroke='#08306b' stroke-width='2'/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4.0;
    svg << "<text x='" << left - 6 << "' y='" << fmt(py(v) + 4, 6) << "' text-anchor='end'>"
        << fmt(v, 4) << "</text>\n";
  }
  svg << "<text x='" << left << "' y='" << height - 8 << "'>0" << (timed ? " s" : "")
      << "</text>\n";
  svg << "<text x='" << (left + width - right) / 2 << "' y='" << height - 8
      << "' text-anchor='middle'>" << (timed ? "seconds since the first trial started" : "trial")
      << "</text>\n";
  svg << "<text x='" << width - right << "' y='" << height - 8 << "' text-anchor='end'>"
      << fmt(t_end, 4) << (timed ? " s" : "") << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

// The metrics the top configurations' table shows beside the knobs.
struct MetricColumn {
  const char* metric;
  const char* heading;
  double scale;  // the metric's unit in the column's
};
constexpr MetricColumn kMetricColumns[] = {{metric::kStepMsMedian, "step ms", 1},
                                           {metric::kPeakBytes, "peak MiB", 1 << 20}};

}  // namespace

std::string render_report(const ReportData& data, const ReportOptions& options) {
  const db::TaskRecord& task = data.task;
  const std::vector<db::TrialRecord>& trials = data.trials;
  // The knobs, in the order of the first configuration.
  std::vector<std::string> knobs;
  for (const auto& t : trials) {
    for (const auto& [name, value] : t.config.entries()) {
      if (std::find(knobs.begin(), knobs.end(), name) == knobs.end()) knobs.push_back(name);
    }
  }
  for (const std::string* k : {&options.x_knob, &options.y_knob}) {
    if (k->empty()) continue;
    if (std::find(knobs.begin(), knobs.end(), *k) == knobs.end()) {
      std::string names;
      for (const auto& n : knobs) names += (names.empty() ? "" : ", ") + n;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "report: task ", task.id, " has no knob '", *k,
                 "' (knobs: ", names, ")");
    }
  }
  std::string xk = options.x_knob, yk = options.y_knob;
  // The default axes: knobs of numbers first (their values have an order a row or a column can
  // show), then those with the most values; a cut knob's sets and a choice come after.
  struct Candidate {
    bool numeric;
    size_t size;
    std::string name;
  };
  std::vector<Candidate> by_size;
  for (const std::string& knob : knobs) {
    const Axis a = axis_of(knob, trials);
    by_size.push_back({a.numeric, a.values.size(), knob});
  }
  std::stable_sort(by_size.begin(), by_size.end(), [](const Candidate& a, const Candidate& b) {
    return a.numeric != b.numeric ? a.numeric : a.size > b.size;
  });
  for (const auto& [numeric, size, name] : by_size) {
    if (xk.empty() && name != yk)
      xk = name;
    else if (yk.empty() && name != xk)
      yk = name;
  }

  size_t ok = 0, pruned = 0, failed = 0, interrupted = 0;
  for (const auto& t : trials) {
    if (t.result.status == TrialStatus::kOk)
      ++ok;
    else if (t.result.status == TrialStatus::kPruned)
      ++pruned;
    else if (t.result.status == TrialStatus::kInterrupted)
      ++interrupted;
    else
      ++failed;
  }
  std::string model = task.key.workload_json;
  const nlohmann::json workload = nlohmann::json::parse(task.key.workload_json, nullptr, false);
  if (workload.is_object() && workload.contains("model"))
    model = workload["model"].get<std::string>();
  else if (workload.is_object() && workload.contains("command"))
    model = workload["command"].dump();

  std::ostringstream html;
  // Every figure is a block of its own (svg{display:block}): an SVG is inline, and the heat map
  // sat on its legend's line, to the right of it.
  html
      << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>slapo tuning report: task "
      << task.id
      << "</title>\n<style>body{font-family:sans-serif;margin:2em;color:#222}svg text{font-size:12px;font-family:sans-serif}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
         "th{background:#eef}h2{margin-top:1.6em}.note{color:#555}.panels{display:flex;flex-wrap:wrap;gap:8px}"
         "svg{display:block}.wide{overflow-x:auto}"
         "code{background:#f4f4f4;padding:2px 4px}</style></head><body>\n";
  html << "<h1>Tuning report: task " << task.id << "</h1>\n";
  html << "<p>" << escape(model) << " · runner " << escape(task.key.runner) << " × "
       << task.key.world_size << " · objective " << escape(task.objective.metric)
       << (task.objective.minimize ? " (minimized)" : " (maximized)") << " · created "
       << escape(task.created_at) << "</p>\n";
  html << "<p>" << ok + failed << " measured (" << ok << " ok, " << failed << " failed), " << pruned
       << " pruned" << (interrupted ? ", " + std::to_string(interrupted) + " interrupted" : "")
       << ".</p>\n";
  if (!data.reproduce.empty()) {
    html << "<p>The best, by hand: <code class='reproduce'>" << escape(data.reproduce)
         << "</code></p>\n";
  }
  if (std::string noise =
          noise_line(data.step_spread, !data.remeasurements.empty(), data.remeasured_spread);
      !noise.empty()) {
    noise.pop_back();  // its newline
    html << "<p class='noise'>" << escape(noise) << "</p>\n";
  }

  html << "<h2>Objective over " << escape(xk) << " × " << escape(yk) << "</h2>\n";
  if (xk.empty() || yk.empty()) {
    html << "<p class='note'>The heat map needs two knobs.</p>\n";
  } else {
    html << "<p class='note'>Each cell: the best " << escape(task.objective.metric)
         << " over the other knobs (the median where re-measured).</p>\n";
    html << legend(task, trials);
    // A map wider than the page scrolls in its own box, not the page.
    html << "<div class='wide'>" << heat_map(task, trials, axis_of(xk, trials), axis_of(yk, trials))
         << "</div>\n";
  }
  // Every knob on its own: the view beyond two.
  double lo = INFINITY, hi = -INFINITY;
  const auto spread = measurements_by_trial(data);
  for (const auto& t : trials) {
    if (t.result.status != TrialStatus::kOk || !t.ranking_objective()) continue;
    lo = std::min(lo, *t.ranking_objective()), hi = std::max(hi, *t.ranking_objective());
    const auto it = spread.find(t.index);
    if (it == spread.end()) continue;
    for (double v : it->second) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (std::isfinite(lo)) {
    html << "<h2>Each knob</h2>\n<p class='note'>Every successful trial's "
         << escape(task.objective.metric)
         << " (the median where re-measured; its bar spans its measurements) against each knob's "
            "values; the dash is the best at that value; a value in grey with ? was not measured."
            "</p>\n<div class='panels'>\n";
    for (const std::string& k : knobs)
      html << knob_panel(task, trials, axis_of(k, trials), spread, lo, hi);
    html << "</div>\n";
  }
  html
      << "<h2>Convergence</h2>\n<p class='note'>The best " << escape(task.objective.metric)
      << " so far (line) over the run's time; dots are trials as they ended, crosses failed ones.</p>\n";
  html << convergence(task, trials);

  // Ranked as Database::best ranks: by the median of the re-measured ones (tuner --confirm), and
  // without the ones that failed a re-measurement.
  const bool confirmed =
      std::any_of(trials.begin(), trials.end(), [](const auto& t) { return t.remeasured > 0; });
  html << "<h2>Top configurations</h2>\n";
  if (confirmed) {
    html
        << "<p class='note'>The best were measured again: they rank by the median of their measurements; one "
           "that failed a re-measurement is left out.</p>\n";
  }
  html << "<table><tr><th>rank</th><th>trial</th><th>" << escape(task.objective.metric) << "</th>";
  if (confirmed) html << "<th>median</th><th>measured</th><th>range</th>";
  std::vector<const db::TrialRecord*> best;
  for (const auto& t : trials) {
    if (t.result.status == TrialStatus::kOk && t.objective && t.remeasure_failed == 0)
      best.push_back(&t);
  }
  std::stable_sort(best.begin(), best.end(), [&](const auto* a, const auto* b) {
    return task.objective.better(*a->ranking_objective(), *b->ranking_objective());
  });
  if (best.size() > options.top) best.resize(options.top);
  // The step time and the peak, each where a row reports it: a command may report neither.
  std::vector<const MetricColumn*> shown;
  for (const MetricColumn& c : kMetricColumns) {
    if (std::any_of(best.begin(), best.end(),
                    [&](const auto* t) { return t->result.metrics.count(c.metric) > 0; }))
      shown.push_back(&c);
  }
  for (const auto& k : knobs) html << "<th>" << escape(k) << "</th>";
  for (const auto* c : shown) html << "<th>" << c->heading << "</th>";
  html << "</tr>\n";
  for (size_t i = 0; i < best.size(); ++i) {
    const auto* t = best[i];
    html << "<tr><td>" << i + 1 << "</td><td>" << t->index << "</td><td>" << fmt(*t->objective, 5)
         << "</td>";
    if (confirmed) {
      html << "<td>" << (t->confirmed_objective ? fmt(*t->confirmed_objective, 5) : "")
           << "</td><td>" << 1 + t->remeasured << "</td><td>";
      const auto it = spread.find(t->index);
      if (it != spread.end() && it->second.size() > 1) {
        const auto [mn, mx] = std::minmax_element(it->second.begin(), it->second.end());
        html << fmt(*mn, 4) << "–" << fmt(*mx, 4);
      }
      html << "</td>";
    }
    for (const auto& k : knobs) {
      const Value* v = t->config.find(k);
      html << "<td>" << (v ? escape(to_plain_string(*v)) : "") << "</td>";
    }
    for (const auto* c : shown) {
      const auto it = t->result.metrics.find(c->metric);
      html << "<td>" << (it == t->result.metrics.end() ? "" : fmt(it->second / c->scale, 4))
           << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</table>\n</body></html>\n";
  return html.str();
}

}  // namespace slapo::cli
