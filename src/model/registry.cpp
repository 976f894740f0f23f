// The family table: every model family this build reads, in one list.
#include "model/registry.h"

namespace edge {

// Listed explicitly (no static self-registration: a static library would drop
// registrations nothing references). A new family: its file under arch/ defining
// `const ArchFamily& <name>_family()`, and its declaration and row here (family.h declares
// the families other code names).
const std::vector<const ArchFamily*>& all_families() {
  static const std::vector<const ArchFamily*> families = {
      &llama_family(), &qwen2_family(), &qwen3_family(), &gemma3_family(), &qwen3moe_family(),
      &gpt_oss_family(), &qwen35_family(), &qwen35moe_family(), &qwen3next_family()};
  return families;
}

const ArchFamily* find_family_gguf(std::string_view arch) {
  for (const ArchFamily* f : all_families())
    for (const std::string& a : f->gguf_archs)
      if (a == arch) return f;
  return nullptr;
}

const ArchFamily* find_family_hf(std::string_view model_type) {
  for (const ArchFamily* f : all_families())
    for (const std::string& a : f->hf_model_types)
      if (a == model_type) return f;
  return nullptr;
}

const ArchVariant* ArchFamily::variant(const std::string& arch) const {
  for (const ArchVariant& v : variants)
    if (v.arch == arch) return &v;
  return nullptr;
}

std::string writable_architectures() {
  std::string s;
  for (const ArchFamily* f : all_families())
    for (const ArchVariant& v : f->variants) s += (s.empty() ? "" : ", ") + v.arch;
  return s;
}

std::string known_architectures() {
  std::string s;
  for (const ArchFamily* f : all_families())
    for (const std::string& a : f->gguf_archs) s += (s.empty() ? "" : ", ") + a;
  return s + ", bert, nomic-bert (text encoders)";
}

}  // namespace edge
