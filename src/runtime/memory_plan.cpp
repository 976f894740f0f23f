#include "runtime/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "kernels/packed_api.h"
#include "model/forward.h"
#include "model/kv_layout.h"
#include "runtime/model_drafter.h"

namespace edge {
namespace {

constexpr int64_t kKvBlockTokens = 16;

// "MemAvailable:  123456 kB" from /proc/meminfo, in bytes; -1 if absent.
int64_t read_mem_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

// A number from a cgroup file; -1 for "max", a missing file or garbage.
int64_t read_cgroup_value(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return -1;
  try {
    return std::stoll(s);
  } catch (...) {
    return -1;
  }
}

// The smallest limit - usage over `dir` and its ancestors down to `top` (a parent's limit
// binds its children too); -1 when none of them sets one. v1 writes "no limit" as a huge
// page-rounded number, v2 as "max".
int64_t smallest_room(std::string dir, const std::string& top, const char* limit_file,
                      const char* usage_file) {
  int64_t room = -1;
  while (dir.size() >= top.size()) {
    const int64_t limit = read_cgroup_value(dir + "/" + limit_file);
    const int64_t usage = read_cgroup_value(dir + "/" + usage_file);
    if (limit >= 0 && usage >= 0 && limit < (int64_t{1} << 60)) {
      const int64_t r = std::max<int64_t>(0, limit - usage);
      room = room < 0 ? r : std::min(room, r);
    }
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || dir == top) break;
    dir = dir.substr(0, slash);
  }
  return room;
}

}  // namespace

// v2 ("0::/path"): memory.max - memory.current under ROOT/path. v1 ("N:memory:/path" or
// "N:...,memory,...:/path"): limit_in_bytes - usage_in_bytes under ROOT/memory/path; a
// container that mounts its own cgroup at ROOT/memory has no such path, so the walk ends
// at the mount's own files.
int64_t cgroup_room_under(const std::string& root, const std::string& proc_self_cgroup) {
  std::istringstream in(proc_self_cgroup);
  std::string line, v2, v1;
  bool has_v1 = false;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) v2 = path;
    if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      v1 = path;
      has_v1 = true;
    }
  }
  const auto under = [](const std::string& top, const std::string& rel) {
    return top + (rel == "/" || rel.empty() ? std::string() : rel);
  };
  int64_t room = -1;
  if (!v2.empty()) room = smallest_room(under(root, v2), root, "memory.max", "memory.current");
  if (room < 0 && has_v1) {
    const std::string top = root + "/memory";
    room = smallest_room(under(top, v1), top, "memory.limit_in_bytes", "memory.usage_in_bytes");
  }
  if (room < 0)  // v1 seen from inside a container: its own cgroup is the mount's root
    room = smallest_room(root + "/memory", root + "/memory", "memory.limit_in_bytes",
                         "memory.usage_in_bytes");
  return room;
}

namespace {

int64_t read_cgroup_room() {
  std::ifstream f("/proc/self/cgroup");
  std::stringstream text;
  text << f.rdbuf();
  return cgroup_room_under("/sys/fs/cgroup", text.str());
}

std::string fmt_pct(int64_t part, int64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%5.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

// The refusal text: total, what may be used, the largest category and by how much.
std::string refusal_text(const MemoryPlan& p) {
  const MemCategory big = p.largest();
  const int64_t over = p.total() - p.limit.bytes;
  std::ostringstream s;
  s << "memory plan refused: needs " << format_bytes(p.total()) << " (ctx " << p.ctx << ", "
    << p.max_seqs << " sequence" << (p.max_seqs > 1 ? "s" : "") << ") but this process may use "
    << format_bytes(p.limit.bytes) << " (" << p.limit.source << "); over by " << format_bytes(over)
    << ". Largest category: " << mem_category_name(big) << " " << format_bytes(p.of(big));
  if (over < p.of(big)) {
    s << ", which would have to shrink to " << format_bytes(p.of(big) - over) << " (by "
      << format_bytes(over) << ").";
  } else {
    s << "; the plan is over by more than all of it (the other categories alone need "
      << format_bytes(p.total() - p.of(big)) << ").";
  }
  if (big == MemCategory::kKv)
    s << " Try a smaller --ctx, --ctx auto, --kv-type q8 (or q4) or fewer --max-seqs.";
  return s.str();
}

// Mapped experts beyond the limit stay on disk: kWeightsMapped keeps the non-expert bytes
// plus the experts' resident share (at least one token's active bytes, at most all).
void plan_file_backed_experts(const ModelFootprint& m, MemoryPlan* p) {
  p->experts_mapped = static_cast<int64_t>(m.experts_mapped);
  p->active_expert_bytes = static_cast<int64_t>(m.active_expert_bytes);
  if (p->experts_mapped == 0) return;
  const int64_t rest = p->total() - p->experts_mapped;
  const int64_t room = p->limit.bytes == INT64_MAX ? p->experts_mapped : p->limit.bytes - rest;
  const int64_t active_mapped = std::min(p->experts_mapped, p->active_expert_bytes);
  p->experts_resident = std::clamp(room, active_mapped, p->experts_mapped);
  p->bytes[static_cast<int>(MemCategory::kWeightsMapped)] -=
      p->experts_mapped - p->experts_resident;
  if (p->experts_resident < p->experts_mapped)
    p->disk_bytes_per_token = static_cast<int64_t>(
        static_cast<double>(active_mapped) *
        (1.0 - static_cast<double>(p->experts_resident) / static_cast<double>(p->experts_mapped)));
}

}  // namespace

MemoryLimit read_memory_limit(int64_t flag_limit) {
  MemoryLimit l;
  l.mem_available = read_mem_available();
  l.cgroup_room = read_cgroup_room();
  l.flag = flag_limit > 0 ? flag_limit : -1;
  l.bytes = -1;
  auto consider = [&](int64_t v, const char* name) {
    if (v >= 0 && (l.bytes < 0 || v < l.bytes)) {
      l.bytes = v;
      l.source = name;
    }
  };
  consider(l.mem_available, "MemAvailable");
  consider(l.cgroup_room, "cgroup limit - usage");
  consider(l.flag, "--memory-limit");
  if (l.bytes < 0) {
    l.bytes = INT64_MAX;
    l.source = "unknown (no limit found)";
  }
  return l;
}

int64_t plan_kv_bytes(const ModelConfig& c, KvTypes t, int64_t ctx, int64_t max_seqs,
                      int64_t max_batched_tokens) {
  // The KV cache's own layout (model/kv_layout.h), so the plan and the cache agree.
  const KvLayout layout = KvLayout::make(c, KvSettings{t, static_cast<int32_t>(kKvBlockTokens)});
  return static_cast<int64_t>(layout.bytes_for(max_seqs, ctx, max_batched_tokens));
}

int64_t plan_scratch_bytes(const ModelConfig& c, int64_t max_batched_tokens, int64_t max_seqs) {
  // Dense FFN buffers only when some layer is dense; MoE layers hold their own (moe_ffn.h).
  const int64_t ff = c.n_moe_layers() < c.n_layer ? 3LL * c.n_ff : 0;
  const int64_t per_token =
      4LL * c.n_embd + 2LL * c.q_dim() + 2LL * c.kv_dim() + ff + (c.moe.enabled() ? c.n_embd : 0);
  // Gated attention's q+gate projection and gate (3 q_dim), the DeltaNet mixer's buffers
  // and its output row.
  const int64_t gated = c.attn_output_gate ? 3LL * c.q_dim() : 0;
  const int64_t mixer_out = c.n_recurrent_layers() > 0 && !c.moe.enabled() ? c.n_embd : 0;
  return max_batched_tokens * (per_token + gated + mixer_out) * 4 +
         max_seqs * static_cast<int64_t>(c.n_vocab) * 4 +
         MoeFfn::scratch_bytes_for(c, max_batched_tokens) +
         DeltaNetMixer::scratch_bytes_for(c, max_batched_tokens);
}

int64_t plan_runtime_bytes(int n_threads) {
  if (n_threads <= 0)
    n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // `edge-infer memory` measures about 1 MiB of RssAnon before any model (libstdc++,
  // relocations, CLI state); the rest is margin for heap slack plus the touched part of
  // each worker's stack and its malloc arena, and per thread one cache block of the plain
  // AVX2 prefill's unpacked code planes (kernels/x86_avx2/packed_avx2_gemm.h).
  return (4LL << 20) + n_threads * ((256LL << 10) + packed_tiling().block_bytes);
}

int64_t MemoryPlan::total() const {
  int64_t t = 0;
  for (int64_t b : bytes) t += b;
  return t;
}

int64_t MemoryPlan::anon_total() const {
  return total() - of(MemCategory::kWeightsMapped);
}

MemCategory MemoryPlan::largest() const {
  int best = 0;
  for (int i = 1; i < kMemCategoryCount; ++i)
    if (bytes[i] > bytes[best]) best = i;
  return static_cast<MemCategory>(best);
}

Expected<MemoryPlan> make_memory_plan(const ModelFootprint& m, const PlanOptions& o,
                                      const MemoryLimit& limit) {
  if (o.ctx < 1)
    return Status::invalid_argument("--ctx must be at least 1 (got " + std::to_string(o.ctx) + ")");
  if (o.max_seqs < 1) return Status::invalid_argument("--max-seqs must be at least 1");
  if (o.max_batched_tokens < 1)
    return Status::invalid_argument("--max-batched-tokens must be at least 1");
  const ModelConfig& c = m.config;
  MemoryPlan p;
  p.model_path = m.path;
  p.format = m.format;
  p.arch = c.arch;
  p.n_layer = c.n_layer;
  p.n_sliding_layers = c.n_sliding_layers();
  p.ctx = o.ctx;
  p.model_max_ctx = c.max_ctx;
  p.kv_types = o.kv_types;
  p.max_seqs = o.max_seqs;
  p.max_batched_tokens = std::min(o.max_batched_tokens, o.ctx * o.max_seqs);
  p.limit = limit;
  auto set = [&](MemCategory cat, int64_t v) { p.bytes[static_cast<int>(cat)] = v; };
  set(MemCategory::kWeights, static_cast<int64_t>(m.weights_anon) + o.encoder_weights_anon);
  set(MemCategory::kWeightsMapped,
      static_cast<int64_t>(m.weights_mapped) + o.encoder_weights_mapped);
  p.kv_needed_per_seq = plan_kv_bytes(c, o.kv_types, o.ctx, 1, p.max_batched_tokens);
  int64_t budget = o.kv_budget_bytes;
  if (o.kv_budget_tokens > 0)
    budget = plan_kv_bytes(c, o.kv_types, o.kv_budget_tokens, 1, p.max_batched_tokens);
  if (budget > 0) {
    p.kv_from_budget = true;
    set(MemCategory::kKv, budget);
  } else {
    set(MemCategory::kKv, plan_kv_bytes(c, o.kv_types, o.ctx, o.max_seqs, p.max_batched_tokens));
  }
  // Recurrent layers: one fixed-size state slot per sequence, whatever the context, the
  // prefix cache's state checkpoints of the same size, and with speculation the states a
  // verify step keeps after each of its tokens.
  set(MemCategory::kState, (o.max_seqs + o.state_checkpoints + o.draft_states) *
                               KvLayout::make(c, KvSettings{o.kv_types, 16}).state_bytes_per_seq());
  set(MemCategory::kScratch,
      plan_scratch_bytes(c, p.max_batched_tokens, o.max_seqs) + o.encoder_scratch);
  // The per-step cos/sin tables of the forward pass (model/forward.h).
  set(MemCategory::kRope, ForwardPass::rope_table_bytes(c, p.max_batched_tokens));
  if (c.encoder_only) {
    // A text encoder keeps no KV, no state and no RoPE tables: one step's activations, the
    // longest sequence's attention scores among them (runtime/encoder_engine.h).
    set(MemCategory::kKv, 0);
    set(MemCategory::kState, 0);
    set(MemCategory::kRope, 0);
    p.kv_needed_per_seq = 0;
    const int64_t longest =
        std::min<int64_t>(p.max_batched_tokens, c.max_ctx > 0 ? c.max_ctx : o.ctx);
    set(MemCategory::kScratch, bert_scratch_floats(c, p.max_batched_tokens, longest) *
                                       static_cast<int64_t>(sizeof(float)) +
                                   o.encoder_scratch);
  }
  set(MemCategory::kTokenizer, m.tokenizer_bytes);
  set(MemCategory::kRuntime, plan_runtime_bytes(o.n_threads));
  if (o.draft) {
    const DraftModelBytes d = plan_draft_model_bytes(*o.draft, o.kv_types, o.ctx, o.max_seqs);
    auto add = [&](MemCategory cat, int64_t v) { p.bytes[static_cast<int>(cat)] += v; };
    add(MemCategory::kWeights, d.weights_anon);
    add(MemCategory::kWeightsMapped, d.weights_mapped);
    add(MemCategory::kKv, d.kv);
    add(MemCategory::kScratch, d.scratch);
    add(MemCategory::kTokenizer, o.draft->tokenizer_bytes);
  }
  plan_file_backed_experts(m, &p);
  if (p.kv_from_budget && budget < p.kv_needed_per_seq) {
    p.refusal = "KV budget " + format_bytes(budget) +
                " is smaller than one request needs: " + format_bytes(p.kv_needed_per_seq) +
                " for a context of " + std::to_string(o.ctx) + " (" + kv_types_name(o.kv_types) +
                "); short by " + format_bytes(p.kv_needed_per_seq - budget) + ".";
    return p;
  }
  p.admitted = p.total() <= limit.bytes;
  if (!p.admitted) p.refusal = refusal_text(p);
  return p;
}

DraftModelBytes plan_draft_model_bytes(const ModelFootprint& draft, KvTypes kv_types, int64_t ctx,
                                       int64_t max_seqs) {
  DraftModelBytes d;
  d.weights_anon = static_cast<int64_t>(draft.weights_anon);
  d.weights_mapped = static_cast<int64_t>(draft.weights_mapped);
  // Each decoding sequence has a cache of its own (an InferenceState): ctx positions.
  d.kv = max_seqs * plan_kv_bytes(draft.config, kv_types, ctx, 1, ModelDrafter::kMaxStep);
  d.scratch = max_seqs * (plan_scratch_bytes(draft.config, ModelDrafter::kMaxStep, 1) +
                          ForwardPass::rope_table_bytes(draft.config, ModelDrafter::kMaxStep));
  return d;
}

Expected<MemoryPlan> plan_memory(const ModelFootprint& m, const PlanOptions& o,
                                 const MemoryLimit& limit) {
  if (!o.ctx_auto) return make_memory_plan(m, o, limit);
  PlanOptions q = o;
  int64_t lo = 16;
  const int64_t hi_bound = m.config.max_ctx > 0 ? m.config.max_ctx : 131072;
  q.ctx = lo;
  ASSIGN_OR_RETURN(MemoryPlan best, make_memory_plan(m, q, limit));
  best.ctx_auto = true;
  if (!best.admitted) return best;  // not even the smallest context fits
  int64_t hi = std::max(lo, hi_bound);
  // Invariant: lo fits; search the largest fitting ctx in (lo, hi].
  while (lo < hi) {
    q.ctx = lo + (hi - lo + 1) / 2;
    ASSIGN_OR_RETURN(MemoryPlan p, make_memory_plan(m, q, limit));
    if (p.admitted) {
      lo = q.ctx;
      best = std::move(p);
      best.ctx_auto = true;
    } else {
      hi = q.ctx - 1;
    }
  }
  return best;
}

Status admission_status(const MemoryPlan& plan) {
  if (plan.admitted) return Status();
  return Status::resource_exhausted(plan.refusal);
}

nlohmann::json MemoryPlan::to_json() const {
  nlohmann::json cats = nlohmann::json::object();
  for (int i = 0; i < kMemCategoryCount; ++i)
    cats[mem_category_name(static_cast<MemCategory>(i))] = bytes[i];
  nlohmann::json j = {{"model", model_path},
                      {"format", format},
                      {"arch", arch},
                      {"n_layer", n_layer},
                      {"n_sliding_layers", n_sliding_layers},
                      {"ctx", ctx},
                      {"ctx_auto", ctx_auto},
                      {"model_max_ctx", model_max_ctx},
                      {"kv_type", kv_types_name(kv_types)},
                      {"kv_type_k", kv_type_name(kv_types.k)},
                      {"kv_type_v", kv_type_name(kv_types.v)},
                      {"max_seqs", max_seqs},
                      {"max_batched_tokens", max_batched_tokens},
                      {"kv_from_budget", kv_from_budget},
                      {"kv_needed_per_seq", kv_needed_per_seq},
                      {"bytes", cats},
                      {"total", total()},
                      {"anon_total", anon_total()},
                      {"largest", mem_category_name(largest())},
                      {"limit",
                       {{"bytes", limit.bytes},
                        {"source", limit.source},
                        {"mem_available", limit.mem_available},
                        {"cgroup_room", limit.cgroup_room},
                        {"memory_limit_flag", limit.flag}}},
                      {"admitted", admitted}};
  if (!admitted) j["refusal"] = refusal;
  if (experts_mapped > 0)
    j["experts"] = {{"mapped", experts_mapped},
                    {"resident", experts_resident},
                    {"active_per_token", active_expert_bytes},
                    {"disk_bytes_per_token", disk_bytes_per_token}};
  return j;
}

std::string MemoryPlan::table() const {
  std::ostringstream s;
  s << "model   " << model_path << " (" << format << ", " << arch << ", " << n_layer << " layers, "
    << n_sliding_layers << " sliding)\n";
  s << "config  ctx " << ctx << (ctx_auto ? " (auto)" : "") << ", max_seqs " << max_seqs << ", kv "
    << kv_types_name(kv_types) << (kv_from_budget ? " (budget)" : "") << ", max_batched_tokens "
    << max_batched_tokens << "\n";
  char line[160];
  for (int i = 0; i < kMemCategoryCount; ++i) {
    const auto c = static_cast<MemCategory>(i);
    if ((c == MemCategory::kOther || c == MemCategory::kState) && bytes[i] == 0) continue;
    std::snprintf(line, sizeof(line), "  %-15s %12s  %s\n", mem_category_name(c),
                  format_bytes(bytes[i]).c_str(), fmt_pct(bytes[i], total()).c_str());
    s << line;
  }
  std::snprintf(line, sizeof(line), "  %-15s %12s  (anonymous %s)\n", "total",
                format_bytes(total()).c_str(), format_bytes(anon_total()).c_str());
  s << line;
  if (experts_mapped > 0)
    s << "experts " << format_bytes(experts_mapped) << " file-backed, "
      << format_bytes(experts_resident) << " resident; a token reads "
      << format_bytes(active_expert_bytes) << " of them, " << format_bytes(disk_bytes_per_token)
      << " from disk\n";
  s << "may use "
    << (limit.bytes == INT64_MAX ? std::string("unlimited") : format_bytes(limit.bytes)) << " ("
    << limit.source << ")\n";
  s << (admitted ? "admitted" : "REFUSED: " + refusal) << "\n";
  return s.str();
}

}  // namespace edge
