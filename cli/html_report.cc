#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

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

// A knob's values in their natural order: numbers by value, others as first seen.
struct Axis {
  std::string knob;
  std::vector<Value> values;
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
  const bool numeric =
      std::all_of(a.values.begin(), a.values.end(), [](const Value& v) { return is_number(v); });
  if (numeric) {
    std::sort(a.values.begin(), a.values.end(),
              [](const Value& x, const Value& y) { return as_number(x) < as_number(y); });
  }
  return a;
}

// White to deep blue: t in [0, 1].
std::string color(double t) {
  const double lo[3] = {247, 251, 255}, hi[3] = {8, 48, 107};
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
      if (task.objective.better(t.objective, c.best)) c.best = t.objective;
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
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' role='img'>\n";
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
        title = "not measured";
      }
      svg << "<rect x='" << cx << "' y='" << cy << "' width='" << cw - 2 << "' height='" << ch - 2
          << "' fill='" << fill << "' stroke='#999'><title>"
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

std::string convergence(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials) {
  std::vector<const db::TrialRecord*> measured;
  for (const auto& t : trials) {
    if (t.result.status != TrialStatus::kPruned) measured.push_back(&t);
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
  const size_t n = std::max<size_t>(measured.size(), 2);
  auto px = [&](size_t i) {
    return left + (width - left - right) * static_cast<double>(i) / static_cast<double>(n - 1);
  };
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
  svg << "<text x='" << left << "' y='" << height - 8 << "'>trial 0</text>\n";
  svg << "<text x='" << width - right << "' y='" << height - 8 << "' text-anchor='end'>trial "
      << measured.size() - 1 << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

std::string render_report(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials,
                          const ReportOptions& options) {
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
  std::vector<std::pair<size_t, std::string>> by_size;
  for (size_t i = 0; i < knobs.size(); ++i)
    by_size.emplace_back(axis_of(knobs[i], trials).values.size(), knobs[i]);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [size, name] : by_size) {
    if (xk.empty() && name != yk)
      xk = name;
    else if (yk.empty() && name != xk)
      yk = name;
  }

  size_t ok = 0, pruned = 0, failed = 0;
  for (const auto& t : trials) {
    if (t.result.status == TrialStatus::kOk)
      ++ok;
    else if (t.result.status == TrialStatus::kPruned)
      ++pruned;
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
  html
      << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>slapo tuning report: task "
      << task.id
      << "</title>\n<style>body{font-family:sans-serif;margin:2em;color:#222}svg text{font-size:12px;font-family:sans-serif}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
         "th{background:#eef}h2{margin-top:1.6em}.note{color:#555}</style></head><body>\n";
  html << "<h1>Tuning report: task " << task.id << "</h1>\n";
  html << "<p>" << escape(model) << " · runner " << escape(task.key.runner) << " × "
       << task.key.world_size << " · objective " << escape(task.objective.metric)
       << (task.objective.minimize ? " (minimized)" : " (maximized)") << " · created "
       << escape(task.created_at) << "</p>\n";
  html << "<p>" << ok + failed << " measured (" << ok << " ok, " << failed << " failed), " << pruned
       << " pruned without running.</p>\n";

  html << "<h2>Objective over " << escape(xk) << " × " << escape(yk) << "</h2>\n";
  if (xk.empty() || yk.empty()) {
    html << "<p class='note'>The heat map needs two knobs.</p>\n";
  } else {
    html
        << "<p class='note'>Each cell: the best " << escape(task.objective.metric)
        << " over the other knobs. "
        << "Hatched: out of memory; grey: pruned (proven out of memory); pink: failed; white: not measured.</p>\n";
    html << heat_map(task, trials, axis_of(xk, trials), axis_of(yk, trials));
  }
  html
      << "<h2>Convergence</h2>\n<p class='note'>The best " << escape(task.objective.metric)
      << " so far (line) against the measured trials in order; dots are trials, crosses failed ones.</p>\n";
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
  if (confirmed) html << "<th>median</th><th>measured</th>";
  for (const auto& k : knobs) html << "<th>" << escape(k) << "</th>";
  html << "<th>step ms</th><th>peak MiB</th></tr>\n";
  std::vector<const db::TrialRecord*> best;
  for (const auto& t : trials) {
    if (t.result.status == TrialStatus::kOk && t.objective && t.remeasure_failed == 0)
      best.push_back(&t);
  }
  std::stable_sort(best.begin(), best.end(), [&](const auto* a, const auto* b) {
    return task.objective.better(*a->ranking_objective(), *b->ranking_objective());
  });
  for (size_t i = 0; i < best.size() && i < options.top; ++i) {
    const auto* t = best[i];
    html << "<tr><td>" << i + 1 << "</td><td>" << t->index << "</td><td>" << fmt(*t->objective, 5)
         << "</td>";
    if (confirmed) {
      html << "<td>" << (t->confirmed_objective ? fmt(*t->confirmed_objective, 5) : "")
           << "</td><td>" << 1 + t->remeasured << "</td>";
    }
    for (const auto& k : knobs) {
      const Value* v = t->config.find(k);
      html << "<td>" << (v ? escape(to_plain_string(*v)) : "") << "</td>";
    }
    auto cell = [&](const char* name, double scale) {
      auto it = t->result.metrics.find(name);
      return it == t->result.metrics.end() ? std::string() : fmt(it->second / scale, 4);
    };
    html << "<td>" << cell(metric::kStepMsMedian, 1) << "</td><td>"
         << cell(metric::kPeakBytes, 1 << 20) << "</td></tr>\n";
  }
  html << "</table>\n</body></html>\n";
  return html.str();
}

}  // namespace slapo::cli
