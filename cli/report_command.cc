// slapo-tune report --db FILE [--task ID] --out report.html: a task's tuning as one HTML file.

#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "cli/count_option.h"
#include "cli/html_report.h"
#include "core/error.h"
#include "db/database.h"

namespace po = boost::program_options;

namespace slapo::cli {

int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string path, out_path;
  int64_t task_id = -1;
  ReportOptions options;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "show this help")
      ("db", po::value<std::string>(&path), "the tuning database")
      ("task", po::value<int64_t>(&task_id), "task id (default: the only task)")
      ("out", po::value<std::string>(&out_path), "the HTML file to write")
      ("x", po::value<std::string>(&options.x_knob), "the heat map's horizontal knob (default: the knob with the most values)")
      ("y", po::value<std::string>(&options.y_knob), "the heat map's vertical knob (default: the next one)")
      ("top", count_value(&options.top)->default_value(Count{10}, "10"), "rows of the top-configurations table");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    out << "usage: slapo-tune report --db FILE [--task ID] --out report.html [--x KNOB] [--y KNOB] [--top K]\n\n"
           "Writes one self-contained HTML file (inline SVG, nothing fetched): a heat map of the objective\n"
           "over two knobs with out-of-memory, pruned and failed cells marked, the convergence curve (best\n"
           "so far by trial), and the top configurations.\n\n"
        << desc;
    return kExitOk;
  }
  SLAPO_CHECK(!path.empty(), ErrorCode::kInvalidArgument, "report: --db FILE is required");
  SLAPO_CHECK(!out_path.empty(), ErrorCode::kInvalidArgument, "report: --out FILE is required");
  auto database = db::Database::open_existing(path);
  if (task_id < 0) {
    const auto tasks = database->tasks();
    SLAPO_CHECK(tasks.size() == 1, ErrorCode::kInvalidArgument, "report: ", path, " has ", tasks.size(),
                " tasks; choose one with --task ID (see 'slapo-tune db tasks --db ", path, "')");
    task_id = tasks[0].id;
  }
  const db::TaskRecord task = database->task(task_id);
  const std::string html = render_report(task, database->trials(task_id), options);
  std::ofstream file(out_path, std::ios::binary | std::ios::trunc);
  SLAPO_CHECK(file.good(), ErrorCode::kIo, "report: cannot write ", out_path);
  file << html;
  file.close();
  SLAPO_CHECK(file.good(), ErrorCode::kIo, "report: writing ", out_path, " failed");
  out << "wrote " << out_path << " (task " << task_id << ", " << task.trial_count << " trials)\n";
  return kExitOk;
}

}  // namespace slapo::cli
