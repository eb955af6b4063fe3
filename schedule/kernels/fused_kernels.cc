#include "schedule/kernels/fused_kernels.h"

namespace slapo::schedule {

// Each kernel's file defines one of these; naming them here pulls the files (and their operator
// registrations) out of the static library.
void link_bias_gelu();
void link_bias_dropout_add();
void link_layer_norm();

void fused_kernels_linked() {
  link_bias_gelu();
  link_bias_dropout_add();
  link_layer_norm();
}

}  // namespace slapo::schedule
