// edge-infer inspect MODEL: the file's format, metadata, the architecture and
// hyper-parameters the engine reads from it, and every tensor with its type and shape.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "commands.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/llama2c.h"
#include "quant/packed.h"
#include "model_info.h"

namespace edge::cli {
namespace {

std::string gguf_value_summary(const GgufValue& v) {
  if (v.type != GgufValueType::ARRAY) {
    return std::visit(
        [](const auto& x) -> std::string {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            std::string s = x.size() > 120 ? x.substr(0, 117) + "..." : x;
            for (char& c : s)
              if (c == '\n') c = ' ';
            return "\"" + s + "\"";
          } else if constexpr (std::is_same_v<T, bool>) {
            return x ? "true" : "false";
          } else {
            return fmt::format("{}", x);
          }
        },
        v.scalar);
  }
  return fmt::format("[{} x {}]", v.array_size(), gguf_value_type_name(v.elem_type));
}

void print_tensors(const TensorSet& tensors) {
  uint64_t total = 0;
  std::printf("tensors (%zu):\n", tensors.size());
  for (const TensorView& t : tensors.all()) {
    PackedFormat pf;
    const std::string type = packed_format_of(t.dtype, &pf) ? pf.name() : dtype_name(t.dtype);
    std::printf("  %-40s %-6s %s\n", t.name.c_str(), type.c_str(), t.shape_string().c_str());
    total += t.nbytes;
  }
  std::printf("tensor bytes: %llu (%.1f MiB)\n", static_cast<unsigned long long>(total), total / 1048576.0);
}

int inspect_gguf(const std::string& path) {
  auto g = GgufFile::open(path, packed_gguf_types());  // our pre-packed files too
  if (!g) return report_error(g.status());
  std::printf("format: GGUF v%u (alignment %llu)\n", g->version(), static_cast<unsigned long long>(g->alignment()));
  std::printf("metadata (%zu):\n", g->metadata().size());
  for (const auto& [key, value] : g->metadata())
    std::printf("  %-44s %s\n", key.c_str(), gguf_value_summary(value).c_str());
  print_model_info(path);
  print_tensors(g->tensors());
  return 0;
}

int inspect_hf(const std::string& path) {
  auto d = HfModelDir::open(path);
  if (!d) return report_error(d.status());
  std::printf("format: Hugging Face directory (%zu safetensors file(s))\n", d->weights.num_files());
  std::printf("config.json: %s\n", d->config.dump().c_str());
  std::printf("tokenizer.json: %s\n", d->tokenizer_json_path.empty() ? "(none)" : d->tokenizer_json_path.c_str());
  print_model_info(path);
  print_tensors(d->weights.tensors());
  return 0;
}

int inspect_llama2c(const std::string& path) {
  auto f = Llama2cFile::open(path);
  if (!f) return report_error(f.status());
  std::printf("format: llama2.c checkpoint\n");
  print_model_info(path);
  print_tensors(f->tensors());
  return 0;
}

int run_inspect(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return inspect_hf(path);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return report_error(Status::not_found(path + ": cannot open"));
  char magic[4] = {0, 0, 0, 0};
  size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  if (n == 4 && std::string(magic, 4) == "GGUF") return inspect_gguf(path);
  return inspect_llama2c(path);
}

}  // namespace

void register_inspect(CLI::App& app, Context& ctx) {
  auto path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("inspect", "Print a model's format, hyper-parameters and tensors");
  sub->add_option("model", *path, "GGUF file, Hugging Face directory or llama2.c .bin")->required();
  sub->callback([path, &ctx] { ctx.exit_code = run_inspect(*path); });
}

}  // namespace edge::cli
