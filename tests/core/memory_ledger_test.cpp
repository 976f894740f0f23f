#include "core/memory_ledger.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace edge {
namespace {

TEST(MemoryLedger, CategoriesSumToWhatWasAllocated) {
  const LedgerSnapshot before = ledger_snapshot();
  {
    TaggedBuffer kv(MemCategory::kKv, 3 << 20, TaggedBuffer::Kind::kAnonMmap);
    TaggedBuffer scratch(MemCategory::kScratch, 12345);
    std::vector<float, TaggedAllocator<float, MemCategory::kRope>> rope(1000);
    LedgerCharge tok(MemCategory::kTokenizer, 777);
    LedgerCharge mapped(MemCategory::kWeightsMapped, 1 << 20);
    ASSERT_NE(kv.data(), nullptr);
    ASSERT_NE(scratch.data(), nullptr);
    kv.data()[kv.size() - 1] = 1;  // writable to the last byte
    const LedgerSnapshot s = ledger_snapshot();
    auto delta = [&](MemCategory c) { return s.current_of(c) - before.current_of(c); };
    EXPECT_EQ(delta(MemCategory::kKv), 3 << 20);
    EXPECT_EQ(delta(MemCategory::kScratch), 12345);
    EXPECT_EQ(delta(MemCategory::kRope), 4000);
    EXPECT_EQ(delta(MemCategory::kTokenizer), 777);
    EXPECT_EQ(delta(MemCategory::kWeightsMapped), 1 << 20);
    const int64_t anon = (3 << 20) + 12345 + 4000 + 777;
    EXPECT_EQ(s.anon_total() - before.anon_total(), anon);
    EXPECT_EQ(s.total() - before.total(), anon + (1 << 20));
    EXPECT_GE(s.peak_of(MemCategory::kKv), s.current_of(MemCategory::kKv));
  }
  const LedgerSnapshot after = ledger_snapshot();
  EXPECT_EQ(after.current, before.current);
  EXPECT_GE(after.peak_of(MemCategory::kKv), before.current_of(MemCategory::kKv) + (3 << 20));
}

TEST(MemoryLedger, MovesTransferTheChargeOnce) {
  const int64_t base = ledger_current(MemCategory::kOther);
  TaggedBuffer a(MemCategory::kOther, 4096);
  TaggedBuffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(ledger_current(MemCategory::kOther), base + 4096);
  LedgerCharge c(MemCategory::kOther, 10);
  LedgerCharge d;
  d = std::move(c);
  EXPECT_EQ(ledger_current(MemCategory::kOther), base + 4106);
  d.set(MemCategory::kOther, 20);
  EXPECT_EQ(ledger_current(MemCategory::kOther), base + 4116);
  b.release();
  d.reset();
  EXPECT_EQ(ledger_current(MemCategory::kOther), base);
}

TEST(MemoryLedger, ThreadSafeCounters) {
  const int64_t base = ledger_current(MemCategory::kRuntime);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 20000; ++i) {
        ledger_add(MemCategory::kRuntime, 3);
        ledger_sub(MemCategory::kRuntime, 2);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ledger_current(MemCategory::kRuntime), base + 4 * 20000);
  ledger_sub(MemCategory::kRuntime, 4 * 20000);
}

TEST(MemoryLedger, PeakIsResetToCurrent) {
  {
    TaggedBuffer big(MemCategory::kScratch, 1 << 20);
  }
  EXPECT_GE(ledger_peak(MemCategory::kScratch), 1 << 20);
  ledger_reset_peaks();
  EXPECT_EQ(ledger_peak(MemCategory::kScratch), ledger_current(MemCategory::kScratch));
}

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(*parse_byte_size("1000000"), 1000000);
  EXPECT_EQ(*parse_byte_size("192MiB"), 192LL << 20);
  EXPECT_EQ(*parse_byte_size("2GiB"), 2LL << 30);
  EXPECT_EQ(*parse_byte_size("2G"), 2LL << 30);
  EXPECT_EQ(*parse_byte_size("1.5GB"), 1500000000LL);
  EXPECT_EQ(*parse_byte_size("64k"), 65536);
  EXPECT_EQ(*parse_byte_size("512 MB"), 512000000LL);
  EXPECT_EQ(*parse_byte_size("7b"), 7);
}

TEST(ByteSize, RejectsBadInput) {
  for (const char* bad : {"", "MiB", "-5", "12XB", "1.2.3", "5 MiB x", "99999999999TiB"}) {
    EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
  }
}

TEST(ByteSize, Formats) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(192LL << 20), "192.0 MiB");
  EXPECT_EQ(format_bytes(3LL << 29), "1.50 GiB");
}

}  // namespace
}  // namespace edge
