// Shared helpers for commands that load a model: printing what was loaded.
#pragma once

#include <string>

namespace edge::cli {

// Loads the model's configuration (weights stay mapped, nothing is computed) and prints
// architecture and hyper-parameters, or the reason it cannot be loaded.
void print_model_info(const std::string& path);

}  // namespace edge::cli
