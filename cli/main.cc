// slapo-tune: the command line (cli/run_command_line.h).

#include "cli/run_command_line.h"

int main(int argc, char** argv) { return slapo::cli::run_command_line(argc, argv); }
