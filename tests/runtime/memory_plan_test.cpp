#include "runtime/memory_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "convert/random_model.h"
#include "model/model.h"
#include "model/model_footprint.h"

namespace edge {
namespace {

std::string made_model(const RandomModelOptions& o, const std::string& name) {
  const std::string path = testing::TempDir() + "/edge_plan_" + std::to_string(getpid()) + "_" + name;
  EXPECT_TRUE(write_random_model(o, path).ok());
  return path;
}

RandomModelOptions small_llama_options() {
  RandomModelOptions o;
  o.arch = "llama";
  o.n_layer = 2;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 128;
  o.n_vocab = 512;
  o.ctx = 2048;
  o.dtype = DType::F16;
  return o;
}

MemoryLimit unlimited() {
  MemoryLimit l;
  l.bytes = INT64_MAX;
  l.source = "test";
  return l;
}

TEST(ModelFootprint, LlamaF16ByHand) {
  const std::string path = made_model(small_llama_options(), "llama.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  // Mapped F16 matrices: token_embd, output [512, 64]; per layer wq, wo [64, 64],
  // wk, wv [32, 64], gate, up [128, 64], down [64, 128].
  const uint64_t per_layer = (64 * 64 * 2 + 32 * 64 * 2 + 128 * 64 * 3) * 2;
  EXPECT_EQ(fp->weights_mapped, 2 * 512 * 64 * 2 + 2 * per_layer);
  // Anonymous: F32 copies of output_norm and each layer's attn_norm and ffn_norm [64].
  EXPECT_EQ(fp->weights_anon, (64 + 2 * 2 * 64) * 4u);
  EXPECT_EQ(fp->repacked_tensors, 0);
  EXPECT_GT(fp->tokenizer_bytes, 512 * 32);  // at least a std::string per token
  EXPECT_EQ(fp->config.n_layer, 2);
}

TEST(ModelFootprint, MatchesTheLoadedModelsLedger) {
  const std::string path = made_model(small_llama_options(), "ledger.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok());
  const int64_t mapped_before = ledger_current(MemCategory::kWeightsMapped);
  const int64_t anon_before = ledger_current(MemCategory::kWeights);
  {
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(ledger_current(MemCategory::kWeightsMapped) - mapped_before, static_cast<int64_t>(fp->weights_mapped));
    EXPECT_EQ(ledger_current(MemCategory::kWeights) - anon_before, static_cast<int64_t>(fp->weights_anon));
    EXPECT_EQ((*m)->memory().weights_mapped, static_cast<int64_t>(fp->weights_mapped));
    EXPECT_GT(ledger_current(MemCategory::kTokenizer), 0);
  }
  EXPECT_EQ(ledger_current(MemCategory::kWeightsMapped), mapped_before);
  EXPECT_EQ(ledger_current(MemCategory::kWeights), anon_before);
}

TEST(MemoryPlan, KvAndScratchByHand) {
  auto c = random_model_config(small_llama_options());
  ASSERT_TRUE(c.ok());
  // kv_dim 32, f16 rows 64 B; ctx 100 -> 7 blocks/layer; block/layer 2*16*64 = 2048 B.
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kF16, 100, 1, 8), 2 * 7 * 2048);
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kF16, 100, 3, 8), 3 * 2 * 7 * 2048);
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kF32, 16, 1, 8), 2 * 1 * 2 * 16 * 128);
  // q8 rows: kv_dim + 4 * n_head_kv = 40 B.
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kQ8, 32, 1, 8), 2 * 2 * 2 * 16 * 40);
  // 8 tokens * (4*64 + 2*64 + 2*32 + 3*128) * 4 + 3 * 512 * 4.
  EXPECT_EQ(plan_scratch_bytes(*c, 8, 3), 8 * 832 * 4 + 3 * 512 * 4);
}

TEST(MemoryPlan, SlidingLayersPayOnlyTheirWindow) {
  RandomModelOptions o = small_llama_options();
  o.arch = "spark";
  o.n_layer = 8;  // pattern 4: 3 sliding + 1 global -> 6 sliding, 2 global
  o.sliding_window = 32;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  auto c = random_model_config(o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_EQ(c->n_sliding_layers(), 6);
  const int64_t row = kv_row_bytes(KvType::kQ8, c->n_head_kv, c->head_dim);
  // global: ceil(1024/16) = 64 blocks; sliding: min(64, ceil((32 + 16) / 16) + 1) = 4.
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kQ8, 1024, 1, 16), (2 * 64 + 6 * 4) * 2 * 16 * row);
  // Short contexts: sliding layers need no more than the global ones.
  EXPECT_EQ(plan_kv_bytes(*c, KvType::kQ8, 32, 1, 16), 8 * 2 * 2 * 16 * row);
}

TEST(MemoryPlan, WholePlanAndRefusal) {
  const std::string path = made_model(small_llama_options(), "plan.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok());
  PlanOptions o;
  o.ctx = 100;
  o.max_seqs = 3;
  o.max_batched_tokens = 8;
  o.n_threads = 2;
  auto p = make_memory_plan(*fp, o, unlimited());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->admitted);
  EXPECT_EQ(p->of(MemCategory::kKv), 3 * 2 * 7 * 2048);
  EXPECT_EQ(p->of(MemCategory::kScratch), 8 * 832 * 4 + 3 * 512 * 4);
  // One RoPE type (all layers global), rotary dims = head_dim 16, 8 tokens per step.
  EXPECT_EQ(p->of(MemCategory::kRope), 1 * 8 * 16 * 4);
  EXPECT_EQ(p->of(MemCategory::kWeightsMapped), static_cast<int64_t>(fp->weights_mapped));
  EXPECT_EQ(p->of(MemCategory::kRuntime), plan_runtime_bytes(2));
  EXPECT_EQ(p->total(), p->anon_total() + p->of(MemCategory::kWeightsMapped));
  EXPECT_TRUE(admission_status(*p).ok());

  MemoryLimit tight = unlimited();
  tight.bytes = p->total() - 1000;
  tight.source = "--memory-limit";
  auto r = make_memory_plan(*fp, o, tight);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->admitted);
  const Status st = admission_status(*r);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find(mem_category_name(r->largest())), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("over by 1000 B"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--memory-limit"), std::string::npos);
}

TEST(MemoryPlan, CtxAutoFindsTheLargestThatFits) {
  const std::string path = made_model(small_llama_options(), "auto.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok());
  PlanOptions o;
  o.ctx = 1000;
  o.max_batched_tokens = 8;
  auto at1000 = make_memory_plan(*fp, o, unlimited());
  ASSERT_TRUE(at1000.ok());
  MemoryLimit l = unlimited();
  l.bytes = at1000->total();
  o.ctx_auto = true;
  auto a = plan_memory(*fp, o, l);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->admitted);
  EXPECT_TRUE(a->ctx_auto);
  EXPECT_EQ(a->ctx, 1008);  // KV grows in blocks of 16: 993..1008 cost the same as 1000
  // Nothing fits: the refused plan comes back.
  l.bytes = 1000;
  auto none = plan_memory(*fp, o, l);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->admitted);
  // Unlimited: the model's advertised context.
  auto all = plan_memory(*fp, o, unlimited());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->ctx, 2048);
}

TEST(MemoryPlan, KvBudget) {
  const std::string path = made_model(small_llama_options(), "budget.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok());
  PlanOptions o;
  o.ctx = 100;
  o.max_batched_tokens = 8;
  o.kv_budget_bytes = 1 << 20;
  auto p = make_memory_plan(*fp, o, unlimited());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->admitted);
  EXPECT_EQ(p->of(MemCategory::kKv), 1 << 20);  // exactly the budget
  o.kv_budget_bytes = 1000;  // one request of 100 positions needs 28672 B
  auto small = make_memory_plan(*fp, o, unlimited());
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->admitted);
  EXPECT_NE(small->refusal.find("smaller than one request"), std::string::npos) << small->refusal;
  o.kv_budget_bytes = 0;
  o.kv_budget_tokens = 64;  // 4 blocks per layer
  auto tok = make_memory_plan(*fp, o, unlimited());
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->of(MemCategory::kKv), 2 * 4 * 2048);
}

TEST(MemoryPlan, BadOptions) {
  const std::string path = made_model(small_llama_options(), "bad.gguf");
  auto fp = read_model_footprint(path);
  ASSERT_TRUE(fp.ok());
  PlanOptions o;
  o.ctx = 0;
  EXPECT_EQ(make_memory_plan(*fp, o, unlimited()).status().code(), StatusCode::kInvalidArgument);
  o.ctx = 10;
  o.max_seqs = 0;
  EXPECT_EQ(make_memory_plan(*fp, o, unlimited()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(read_model_footprint("/nonexistent/model.gguf").ok());
}

TEST(MemoryPlan, MemoryLimitTakesTheSmallest) {
  const MemoryLimit none = read_memory_limit(0);
  EXPECT_GT(none.mem_available, 0);
  EXPECT_GT(none.bytes, 0);
  const MemoryLimit flag = read_memory_limit(12345);
  EXPECT_EQ(flag.bytes, 12345);
  EXPECT_EQ(flag.source, "--memory-limit");
}

// A fake cgroup tree: each cgroup's limit and usage files, as the kernel writes them.
class CgroupTree {
 public:
  CgroupTree() : root_(testing::TempDir() + "/edge_cgroup_" + std::to_string(getpid())) {
    std::filesystem::remove_all(root_);
  }
  ~CgroupTree() { std::filesystem::remove_all(root_); }
  void set(const std::string& dir, const std::string& file, const std::string& value) {
    std::filesystem::create_directories(root_ + dir);
    std::ofstream(root_ + dir + "/" + file) << value << "\n";
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

constexpr const char* kV1NoLimit = "9223372036854771712";  // v1's "unlimited"

// cgroup v1 with nested groups (a benchmark's cap under the session's cgroup): the tightest
// ancestor wins, and the root's huge "no limit" value is ignored.
TEST(MemoryLimit, CgroupV1NestedTakesTheTightestAncestor) {
  CgroupTree t;
  t.set("/memory", "memory.limit_in_bytes", kV1NoLimit);
  t.set("/memory", "memory.usage_in_bytes", "9000000000");
  t.set("/memory/session", "memory.limit_in_bytes", "3221225472");  // 3 GiB
  t.set("/memory/session", "memory.usage_in_bytes", "1073741824");  // 1 GiB
  t.set("/memory/session/cap", "memory.limit_in_bytes", kV1NoLimit);
  t.set("/memory/session/cap", "memory.usage_in_bytes", "536870912");
  const std::string self = "9:name=systemd:/\n4:memory:/session/cap\n0::/\n";
  EXPECT_EQ(cgroup_room_under(t.root(), self), int64_t{2} << 30);
  t.set("/memory/session/cap", "memory.limit_in_bytes", "1073741824");  // tighter: 1 GiB
  EXPECT_EQ(cgroup_room_under(t.root(), self), int64_t{512} << 20);
  // A limit below the usage leaves no room, not a negative one.
  t.set("/memory/session/cap", "memory.usage_in_bytes", "2147483648");
  EXPECT_EQ(cgroup_room_under(t.root(), self), 0);
}

// A container that mounts its own v1 cgroup at /sys/fs/cgroup/memory: the path in
// /proc/self/cgroup does not exist under the mount, whose own files are the limit.
TEST(MemoryLimit, CgroupV1ContainerViewReadsTheMountsOwnFiles) {
  CgroupTree t;
  t.set("/memory", "memory.limit_in_bytes", "1073741824");
  t.set("/memory", "memory.usage_in_bytes", "268435456");
  EXPECT_EQ(cgroup_room_under(t.root(), "4:memory:/docker/abc\n"), int64_t{768} << 20);
  EXPECT_EQ(cgroup_room_under(t.root(), "4:cpu,memory:/docker/abc\n"), int64_t{768} << 20);
  t.set("/memory", "memory.limit_in_bytes", kV1NoLimit);
  EXPECT_EQ(cgroup_room_under(t.root(), "4:memory:/docker/abc\n"), -1);
}

// cgroup v2: "max" is no limit; a parent's memory.max binds the child.
TEST(MemoryLimit, CgroupV2ParentLimitBindsTheChild) {
  CgroupTree t;
  t.set("/user/job", "memory.max", "max");
  t.set("/user/job", "memory.current", "100");
  t.set("/user", "memory.max", "1100");
  t.set("/user", "memory.current", "600");
  EXPECT_EQ(cgroup_room_under(t.root(), "0::/user/job\n"), 500);
  t.set("/user", "memory.max", "max");
  EXPECT_EQ(cgroup_room_under(t.root(), "0::/user/job\n"), -1);
  EXPECT_EQ(cgroup_room_under(t.root(), ""), -1);
}

}  // namespace
}  // namespace edge
