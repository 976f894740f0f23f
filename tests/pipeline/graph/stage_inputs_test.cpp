// Channels between stages: chunks in order; a full channel stalls its producer until the
// consumer takes one (nothing lost, nothing grows); the end and a producer's error reach
// the consumer; a consumer that leaves, or a cancelled request, releases a waiting producer.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "pipeline/graph/stage_inputs.h"

namespace edge::pipeline {
namespace {

PortValue ids(std::vector<int32_t> v) {
  PortValue p;
  p.tokens = std::move(v);
  return p;
}

TEST(Channel, AFullChannelStallsItsProducerAndLosesNothing) {
  std::atomic<bool> stop{false};
  Channel ch(2);
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(ch.push(ids({i}), stop));
      ++pushed;
    }
    ch.close();
  });
  // The producer gets exactly as far as the capacity while nobody reads.
  while (pushed < 2) std::this_thread::yield();
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(pushed.load(), 2) << "the producer went past a full channel";
  }
  std::vector<int32_t> got;
  for (;;) {
    auto c = ch.pop(stop);
    ASSERT_TRUE(c.ok());
    if (!*c) break;
    got.insert(got.end(), (*c)->tokens.begin(), (*c)->tokens.end());
  }
  producer.join();
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ch.high_water(), 2);
}

TEST(Channel, TheProducersErrorEndsTheConsumersStream) {
  std::atomic<bool> stop{false};
  Channel ch(4);
  ASSERT_TRUE(ch.push(ids({1}), stop));
  ch.close(Status::unavailable("the talker died"));
  auto first = ch.pop(stop);
  ASSERT_TRUE(first.ok() && *first);
  auto end = ch.pop(stop);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), StatusCode::kUnavailable);
}

TEST(Channel, ALeavingConsumerOrACancelReleasesAWaitingProducer) {
  std::atomic<bool> stop{false};
  Channel a(1);
  ASSERT_TRUE(a.push(ids({1}), stop));
  std::thread t([&] { EXPECT_FALSE(a.push(ids({2}), stop)); });
  a.abandon();
  t.join();
  Channel b(1);
  ASSERT_TRUE(b.push(ids({1}), stop));
  std::thread u([&] { EXPECT_FALSE(b.push(ids({2}), stop)); });
  stop = true;
  u.join();
  Channel c(1);
  EXPECT_EQ(c.pop(stop).status().code(), StatusCode::kCancelled);
}

TEST(StageInputs, ChunksArriveAsTheyComeOrGatheredWhole) {
  std::atomic<bool> stop{false};
  auto codes = std::make_shared<Channel>(4), text = std::make_shared<Channel>(4);
  StageInputs in({{"codes", codes}, {"text", text}}, stop);
  ASSERT_TRUE(codes->push(ids({1, 2}), stop));
  auto c = in.next("codes");
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_EQ((*c)->tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(in.next("nope").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(codes->push(ids({3}), stop));
  codes->close();
  PortValue t;
  t.text = "hi";
  ASSERT_TRUE(text->push(t, stop));
  text->close();
  auto all = in.gather();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["codes"].tokens, (std::vector<int32_t>{3}));  // what was left
  EXPECT_EQ((*all)["text"].text, "hi");
}

}  // namespace
}  // namespace edge::pipeline
