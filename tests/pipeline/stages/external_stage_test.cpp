// The parts of an external stage that need no process: the SSE reader (events split
// anywhere across reads), completion chunks as our server and llama.cpp's write them
// (text, token ids where given, the finish, an error inside the stream), the placement
// proof read from either backend's output, and the command lines. The processes
// themselves are tested in tests/e2e/pipeline_external_test.cpp.
#include "pipeline/stages/external_stage.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/stages/external_backend.h"

namespace edge::pipeline {
namespace {

std::vector<std::string> read_events(const std::string& stream, size_t piece) {
  SseReader r;
  std::vector<std::string> out;
  for (size_t at = 0; at < stream.size(); at += piece)
    EXPECT_TRUE(r.feed(std::string_view(stream).substr(at, piece), [&](const std::string& d) {
      out.push_back(d);
      return true;
    }));
  return out;
}

TEST(ExternalSse, EventsAreTheSameHoweverTheStreamIsSplit) {
  const std::string stream =
      ": ping\n\ndata: {\"a\":1}\n\ndata: one\r\ndata: two\r\n\r\nevent: x\ndata:[DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "one\ntwo", "[DONE]"};
  for (size_t piece = 1; piece <= stream.size(); ++piece)
    EXPECT_EQ(read_events(stream, piece), want) << "pieces of " << piece << " bytes";
}

TEST(ExternalSse, AFalseFromTheConsumerStopsTheFeed) {
  SseReader r;
  int seen = 0;
  EXPECT_FALSE(r.feed("data: 1\n\ndata: 2\n\n", [&](const std::string&) { return ++seen < 1; }));
  EXPECT_EQ(seen, 1);
}

TEST(ExternalChunks, OurChunksCarryTextAndTheFinish) {
  auto d = parse_completion_chunk(
      R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"Once",)"
      R"("logprobs":null,"finish_reason":null}]})");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->text, "Once");
  EXPECT_TRUE(d->tokens.empty());
  EXPECT_TRUE(d->finish_reason.empty());
  d = parse_completion_chunk(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->finish_reason, "length");
  d = parse_completion_chunk(R"({"choices":[],"usage":{"completion_tokens":3}})");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->text.empty() && d->finish_reason.empty());
}

TEST(ExternalChunks, TokenIdsAreReadWhereLlamaCppGivesThem) {
  auto d = parse_completion_chunk(
      R"({"choices":[{"text":" upon","logprobs":{"content":[{"id":2501,"token":" upon",)"
      R"("logprob":-0.1,"top_logprobs":[{"id":2501,"logprob":-0.1}]}]},"finish_reason":null}]})");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->tokens, std::vector<int32_t>{2501});
  d = parse_completion_chunk(R"({"choices":[{"text":"ab","tokens":[7,8]}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tokens, (std::vector<int32_t>{7, 8}));
  // Our completion logprobs name tokens by their text: no ids to take from them.
  d = parse_completion_chunk(
      R"({"choices":[{"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1]}}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tokens.empty());
}

TEST(ExternalChunks, ErrorsInTheStreamAndGarbageAreReported) {
  auto d = parse_completion_chunk(R"({"error":{"message":"the engine failed","code":500}})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->error, "the engine failed");
  EXPECT_FALSE(parse_completion_chunk("not json").ok());
  EXPECT_FALSE(parse_completion_chunk(R"({"object":"text_completion"})").ok());
  EXPECT_FALSE(parse_completion_chunk(R"({"choices":[3]})").ok());
}

TEST(ExternalPlacement, OursIsTheLineItPrints) {
  const std::vector<std::string> out = {
      "edge-infer: serving lm.gguf (context 512, up to 2 sequences)",
      "edge-infer: placement cpu (AMD Ryzen 7 7840U; dense kernels avx512)",
      "edge-infer: listening on http://127.0.0.1:40123"};
  EXPECT_EQ(placement_proof(ServerFlavour::kEdgeInfer, out),
            "cpu (AMD Ryzen 7 7840U; dense kernels avx512)");
  EXPECT_EQ(placement_proof(ServerFlavour::kEdgeInfer, {"edge-infer: listening on x"}),
            "unreported");
}

TEST(ExternalPlacement, LlamaServerIsItsDevicesAndOffloadedLayers) {
  const std::vector<std::string> igpu = {
      "ggml_vulkan: 0 = Intel(R) Graphics (RPL-P) (Intel open-source Mesa driver) | uma: 1",
      "llama_model_load_from_file_impl: using device Vulkan0 (Intel(R) Graphics (RPL-P)) - "
      "15023 MiB free",
      "load_tensors: offloading 32 repeating layers to GPU",
      "load_tensors: offloaded 33/33 layers to GPU",
      "main: server is listening on http://127.0.0.1:41000 - starting the main loop"};
  EXPECT_EQ(placement_proof(ServerFlavour::kLlamaServer, igpu),
            "Vulkan0 (Intel(R) Graphics (RPL-P)), 33/33 layers offloaded");
  EXPECT_EQ(
      placement_proof(ServerFlavour::kLlamaServer, {"load_tensors: offloaded 0/33 layers to GPU"}),
      "cpu (0/33 layers offloaded)");
  EXPECT_EQ(
      placement_proof(ServerFlavour::kLlamaServer, {"main: loading model"}).rfind("unreported", 0),
      0u);
  // A build without a GPU backend names only the CPU device and prints no offload line.
  EXPECT_EQ(placement_proof(ServerFlavour::kLlamaServer, {"CPU: using device CPU - 0 MiB free"}),
            "cpu (CPU device only, no layers offloaded)");
}

// The build line each flavour prints at start: the evidence's backend_version.
TEST(ExternalPlacement, BackendVersionIsItsBuildLine) {
  EXPECT_EQ(backend_version(ServerFlavour::kEdgeInfer, {"edge-infer: placement cpu (x)", "edge-infer: build 1a2b3c"}),
            "edge-infer 1a2b3c");
  EXPECT_EQ(backend_version(ServerFlavour::kLlamaServer,
                            {"build: 4798 (1782cdfe) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu"}),
            "llama-server build: 4798 (1782cdfe) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu");
  EXPECT_EQ(backend_version(ServerFlavour::kLlamaServer,
                            {"INFO [ main] build info | tid=\"1\" timestamp=2 build=0 commit=\"unknown\""}),
            "llama-server build=0 commit=\"unknown\"");  // ik_llama.cpp's form
  EXPECT_EQ(backend_version(ServerFlavour::kLlamaServer, {"main: loading model"}), "unreported");
}

// The device class a placement_policy: require stage is held to.
TEST(ExternalPlacement, ProofsGiveTheDeviceClass) {
  EXPECT_EQ(device_of_proof("cpu (AMD EPYC; dense kernels avx512)"), "cpu");
  EXPECT_EQ(device_of_proof("cpu (0/33 layers offloaded)"), "cpu");
  EXPECT_EQ(device_of_proof("Vulkan0 (Intel(R) Graphics (RPL-P)), 33/33 layers offloaded"), "gpu");
  EXPECT_EQ(device_of_proof("Vulkan0 (Intel(R) Graphics), 20/33 layers offloaded"), "partial");
  EXPECT_EQ(device_of_proof("unreported (no 'offloaded N/M layers' line)"), "unknown");
}

// A multimodal backend's proof covers its vision encoder: our line, or llama.cpp's CLIP
// backend line; the device class holds only when the model and the encoder agree.
TEST(ExternalPlacement, TheVisionEncodersLineIsPartOfTheProof) {
  EXPECT_EQ(vision_placement_proof(ServerFlavour::kEdgeInfer,
                                   {"edge-infer: vision placement cpu (mmproj.gguf; in process)"}),
            "cpu (mmproj.gguf; in process)");
  EXPECT_EQ(vision_placement_proof(ServerFlavour::kLlamaServer, {"clip_ctx: CLIP using CPU backend"}),
            "cpu (CLIP on the CPU backend)");
  EXPECT_EQ(vision_placement_proof(ServerFlavour::kLlamaServer, {"clip_init: CLIP using Vulkan0 backend"}),
            "Vulkan0 (CLIP backend)");
  EXPECT_EQ(vision_placement_proof(ServerFlavour::kLlamaServer, {"main: loading model"}), "unreported");
  const std::string gpu = "Vulkan0 (Intel(R) Graphics), 33/33 layers offloaded";
  EXPECT_EQ(device_of_proof(gpu + "; vision Vulkan0 (CLIP backend)"), "gpu");
  EXPECT_EQ(device_of_proof(gpu + "; vision cpu (CLIP on the CPU backend)"), "partial");
  EXPECT_EQ(device_of_proof("cpu (AMD EPYC; dense kernels avx2); vision cpu (p.gguf; in process)"), "cpu");
  EXPECT_EQ(device_of_proof(gpu + "; vision unreported"), "unknown");
}

TEST(ExternalChunks, ChatChunksCarryTheDeltasContent) {
  auto d = parse_completion_chunk(
      R"({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->text, "Hi");
  EXPECT_TRUE(d->finish_reason.empty());
  d = parse_completion_chunk(
      R"({"choices":[{"delta":{},"finish_reason":"stop","logprobs":{"content":[{"id":17,"token":"x"}]}}]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->finish_reason, "stop");
  EXPECT_EQ(d->tokens, std::vector<int32_t>{17});
}

TEST(ExternalCommand, EachFlavourGetsItsFlags) {
  BackendLaunch l;
  l.binary = "/opt/edge-infer";
  l.model = "/m/lm.gguf";
  l.ctx = 1024, l.capacity = 3, l.threads = 4;
  l.extra_args = {"--drain-timeout", "2"};
  const std::vector<std::string> ours = backend_argv(l, 0);
  const std::vector<std::string> want_ours = {"/opt/edge-infer",
                                              "serve",
                                              "-m",
                                              "/m/lm.gguf",
                                              "--host",
                                              "127.0.0.1",
                                              "--port",
                                              "0",
                                              "--ctx",
                                              "1024",
                                              "--max-seqs",
                                              "3",
                                              "--kv-type",
                                              "f16",
                                              "--max-batched-tokens",
                                              "512",
                                              "-t",
                                              "4",
                                              "--drain-timeout",
                                              "2"};
  EXPECT_EQ(ours, want_ours);
  l.flavour = ServerFlavour::kLlamaServer;
  l.binary = "/opt/llama-server";
  l.extra_args = {"-ngl", "99"};
  const std::vector<std::string> want_llama = {"/opt/llama-server",
                                               "-m",
                                               "/m/lm.gguf",
                                               "--host",
                                               "127.0.0.1",
                                               "--port",
                                               "41000",
                                               "-c",
                                               "3072",
                                               "-np",
                                               "3",
                                               "-t",
                                               "4",
                                               "-ngl",
                                               "99"};  // -c: all slots together
  EXPECT_EQ(backend_argv(l, 41000), want_llama);
  // A projector goes to both servers as --mmproj.
  l.projector = "/m/mmproj.gguf";
  const std::vector<std::string> with_projector = backend_argv(l, 41000);
  EXPECT_EQ(std::vector<std::string>(with_projector.begin() + 11, with_projector.begin() + 13),
            (std::vector<std::string>{"--mmproj", "/m/mmproj.gguf"}));
}

TEST(ExternalCommand, TheFlavourIsDeclaredOrToldByTheBinarysName) {
  EXPECT_EQ(*server_flavour("", "/usr/local/bin/llama-server"), ServerFlavour::kLlamaServer);
  EXPECT_EQ(*server_flavour("", "/build/bin/edge-infer"), ServerFlavour::kEdgeInfer);
  EXPECT_EQ(*server_flavour("llama-server", "/x/server-vulkan"), ServerFlavour::kLlamaServer);
  EXPECT_FALSE(server_flavour("vllm", "/x/y").ok());
}

}  // namespace
}  // namespace edge::pipeline
