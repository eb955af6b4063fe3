#pragma once
// Interruption: what SIGINT, SIGTERM and SIGHUP do to a tuning run, and the registry of the child
// process groups they end.
//
// Every child this process starts (run_process, fork_and_run, Coprocess, hence every rank of a
// job) registers its process group here while it runs. The first SIGINT, SIGTERM or SIGHUP sets the
// interrupt flag and kills every registered group with SIGKILL — a training script's DataLoader
// workers and every rank of a job included — so the run's loop records the trial as `interrupted`,
// prints its summary and exits; a second one kills the groups again and exits at once (130).
//
// Children also die with this process (PR_SET_PDEATHSIG), so even a SIGKILL of the tuner leaves no
// training process holding a device's memory.
//
// The registry and the handler are async-signal-safe: fixed slots of atomics, kill(2), _exit(2).

#include <sys/types.h>

namespace slapo {

// Installs the SIGINT, SIGTERM and SIGHUP handlers (idempotent).
void install_interrupt_handlers();

// Whether an interrupt arrived since the start (or the last clear_interrupt()).
bool interrupt_requested();
// Sets the flag as a signal would, and kills the registered groups (tests, and a caller that
// decides to stop everything).
void request_interrupt();
// Clears the flag (tests).
void clear_interrupt();

// Registers a child's process group while it runs; false when every slot is taken (the child is
// then not ended by an interrupt, but still dies with this process).
bool register_child_group(pid_t pgid);
void unregister_child_group(pid_t pgid);

}  // namespace slapo
