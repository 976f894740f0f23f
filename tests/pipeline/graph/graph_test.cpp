// Pipeline files: a valid graph parses (YAML and JSON), and each invalid one is refused
// with an error naming what is wrong: unknown stage or port (both route ends), a port
// mismatch, an unrouted required input, an input fed twice, a cycle, a kind that does not
// implement its contract, malformed values, deep nesting.
#include "pipeline/graph/graph.h"

#include <gtest/gtest.h>

#include <string>

namespace edge::pipeline {
namespace {

const char* kHash = "0000000000000000000000000000000000000000000000000000000000000000";

std::string stage(const std::string& name, const std::string& kind, const std::string& contract,
                  const std::string& extra = "") {
  return "  - name: " + name + "\n    kind: " + kind + "\n    contract: " + contract +
         "\n    reservation: 64MiB\n" + extra;
}

const std::string kTts =
    "pipeline: tts\nstages:\n" + stage("talker", "speech_codes", "speech.codes@1") +
    stage("vocoder", "vocoder", "audio.pcm@1", "    placement: worker\n") +
    "routes:\n  - input.text -> talker.text\n  - talker.codes -> vocoder.codes\n"
    "  - vocoder.pcm -> output.audio\n";

Status parse_status(const std::string& text) {
  auto p = parse_pipeline(text, "/tmp");
  return p.ok() ? Status() : p.status();
}

void expect_refused(const std::string& text, const std::string& want) {
  const Status s = parse_status(text);
  EXPECT_FALSE(s.ok()) << "accepted:\n" << text;
  EXPECT_NE(s.message().find(want), std::string::npos)
      << "want '" << want << "' in: " << s.message();
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(PipelineGraph, AValidGraphParsesWithItsStagesInOrder) {
  auto p = parse_pipeline(kTts, "/tmp");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "tts");
  ASSERT_EQ(p->stages.size(), 2u);
  EXPECT_EQ(p->stages[1].placement, Placement::kWorker);
  EXPECT_EQ(p->stages[0].reservation_bytes, 64 << 20);
  ASSERT_EQ(p->routes.size(), 3u);
  EXPECT_EQ(p->routes[1].str(), "talker.codes -> vocoder.codes");
  const auto order = p->topological_order();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0]->name, "talker");
}

TEST(PipelineGraph, PrefixCacheIsAStageSwitchOnByDefault) {
  auto on = parse_pipeline(kTts, "/tmp");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_TRUE(on->stages[0].engine.prefix_cache);
  const std::string off_text = replace(kTts, "contract: speech.codes@1\n",
                                       "contract: speech.codes@1\n    prefix_cache: false\n");
  auto off = parse_pipeline(off_text, "/tmp");
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->stages[0].engine.prefix_cache);
  expect_refused(replace(kTts, "contract: speech.codes@1\n",
                         "contract: speech.codes@1\n    prefix_cache: maybe\n"),
                 "prefix_cache 'maybe' must be true or false");
}

// A text stage's engine may speculate (EngineOptions::speculative): off unless asked.
TEST(PipelineGraph, SpeculativeDecodingIsAStageSetting) {
  auto off = parse_pipeline(kTts, "/tmp");
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(off->stages[0].engine.speculative, "");
  const std::string on_text =
      replace(kTts, "contract: speech.codes@1\n",
              "contract: speech.codes@1\n    speculative: ngram\n    draft_max: 3\n");
  auto on = parse_pipeline(on_text, "/tmp");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_EQ(on->stages[0].engine.speculative, "ngram");
  EXPECT_EQ(on->stages[0].engine.draft_max, 3);
  expect_refused(replace(kTts, "contract: speech.codes@1\n",
                         "contract: speech.codes@1\n    speculative: eagle\n"),
                 "speculative 'eagle' is not ngram");
  // A draft model: relative to the pipeline file, and only with speculative "draft".
  auto drafted = parse_pipeline(
      replace(kTts, "contract: speech.codes@1\n",
              "contract: speech.codes@1\n    speculative: draft\n    draft_model: small.gguf\n"),
      "/models");
  ASSERT_TRUE(drafted.ok()) << drafted.status().to_string();
  EXPECT_EQ(drafted->stages[0].engine.draft_model, "/models/small.gguf");
  expect_refused(replace(kTts, "contract: speech.codes@1\n",
                         "contract: speech.codes@1\n    speculative: draft\n"),
                 "speculative 'draft' needs draft_model");
  expect_refused(replace(kTts, "contract: speech.codes@1\n",
                         "contract: speech.codes@1\n    draft_model: small.gguf\n"),
                 "draft_model is given but speculative is not 'draft'");
  expect_refused(
      replace(kTts, "contract: speech.codes@1\n", "contract: speech.codes@1\n    draft_max: 40\n"),
      "draft_max '40' must be an integer in 1..16");
}

TEST(PipelineGraph, JsonIsAcceptedToo) {
  const std::string json = R"({"pipeline": "j", "stages": [
      {"name": "lm", "kind": "lm", "contract": "text.generate@1", "reservation": "1GiB",
       "artifacts": [{"role": "model", "path": "m.gguf", "sha256": ")" +
                           std::string(kHash) + R"("}]}],
    "routes": ["input.prompt -> lm.prompt", "lm.text -> output.text"]})";
  auto p = parse_pipeline(json, "/tmp");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->stages[0].artifacts.at(0).path, "m.gguf");
}

TEST(PipelineGraph, RouteErrorsNameBothEnds) {
  expect_refused(replace(kTts, "talker.codes -> vocoder.codes", "talker.codes -> vocodr.codes"),
                 "route talker.codes -> vocodr.codes: no stage 'vocodr'");
  expect_refused(
      replace(kTts, "talker.codes -> vocoder.codes", "talker.codez -> vocoder.codes"),
      "route talker.codez -> vocoder.codes: stage 'talker' (speech.codes@1) has no output 'codez'");
  expect_refused(replace(kTts, "talker.codes -> vocoder.codes", "talker.codes -> vocoder.pcm"),
                 "stage 'vocoder' (audio.pcm@1) has no input 'pcm'");
  expect_refused(replace(kTts, "talker.codes -> vocoder.codes", "talker.codes vocoder.codes"),
                 "has no '->'");
}

TEST(PipelineGraph, PortMismatchIsNamed) {
  // text (utf8, text) into a vocoder's codes (i32, speech codes).
  expect_refused(
      replace(kTts, "  - talker.codes -> vocoder.codes\n", "  - input.text -> vocoder.codes\n"),
      "route input.text -> vocoder.codes");
  const std::string lm_to_vocoder =
      "stages:\n" + stage("lm", "lm", "text.generate@1") + stage("voc", "vocoder", "audio.pcm@1") +
      "routes:\n  - input.p -> lm.prompt\n  - lm.tokens -> voc.codes\n  - voc.pcm -> output.a\n";
  expect_refused(lm_to_vocoder,
                 "route lm.tokens -> voc.codes: ports differ: modality tokens vs speech_codes");
}

TEST(PipelineGraph, UnroutedRequiredInputAndDoubleFeedAreRefused) {
  expect_refused(replace(kTts, "  - talker.codes -> vocoder.codes\n", ""),
                 "stage 'vocoder' (audio.pcm@1): required input 'codes' is not routed");
  expect_refused(kTts + "  - talker.codes -> vocoder.codes\n",
                 "input vocoder.codes is fed by two routes: talker.codes -> vocoder.codes and "
                 "talker.codes -> vocoder.codes");
  expect_refused(replace(kTts, "  - vocoder.pcm -> output.audio\n", ""),
                 "no route reaches the graph's output");
}

TEST(PipelineGraph, CyclesAreRefused) {
  // Two independent chains are fine; an LM feeding itself through an external text stage
  // is a cycle, named by its routes.
  const std::string two =
      "stages:\n" + stage("v1", "vocoder", "audio.pcm@1") + stage("v2", "vocoder", "audio.pcm@1") +
      stage("t1", "speech_codes", "speech.codes@1") +
      stage("t2", "speech_codes", "speech.codes@1") +
      "routes:\n  - t1.codes -> v1.codes\n  - t2.codes -> v2.codes\n  - input.x -> t1.text\n"
      "  - input.y -> t2.text\n  - v1.pcm -> output.a\n  - v2.pcm -> output.b\n";
  EXPECT_TRUE(parse_status(two).ok()) << parse_status(two).message();
  const std::string lm_loop =
      "stages:\n" + stage("lm", "lm", "text.generate@1") +
      stage("ext", "external", "text.generate@1", "    placement: external\n    backend: x\n") +
      "routes:\n  - lm.tokens -> ext.prompt\n  - ext.tokens -> lm.prompt\n  - lm.text -> "
      "output.t\n";
  expect_refused(lm_loop, "routes form a cycle: lm.tokens -> ext.prompt, ext.tokens -> lm.prompt");
}

TEST(PipelineGraph, StageDeclarationErrorsAreNamed) {
  expect_refused(replace(kTts, "kind: vocoder", "kind: vocodr"), "kind 'vocodr' is not one of");
  expect_refused(replace(kTts, "contract: audio.pcm@1", "contract: audio.pcm@7"),
                 "unknown contract audio.pcm@7");
  expect_refused(replace(kTts, "contract: audio.pcm@1", "contract: speech.codes@1"),
                 "stage 'vocoder': a vocoder stage does not implement speech.codes@1");
  // A kind implements the versions of its contract whose ports it makes: frames of 16 codes
  // (speech.codes@3, audio.pcm@2) are the Qwen3-TTS kinds', single codes the others'.
  expect_refused(replace(kTts, "contract: audio.pcm@1", "contract: audio.pcm@2"),
                 "stage 'vocoder': a vocoder stage does not implement audio.pcm@2");
  expect_refused(replace(kTts, "kind: vocoder", "kind: qwen3_tts_codec"),
                 "stage 'vocoder': a qwen3_tts_codec stage does not implement audio.pcm@1");
  expect_refused(replace(kTts, "kind: speech_codes", "kind: qwen3_tts_talker"),
                 "a qwen3_tts_talker stage does not implement speech.codes@1");
  expect_refused(replace(kTts, "contract: speech.codes@1", "contract: speech.codes@3"),
                 "a speech_codes stage does not implement speech.codes@3");
  expect_refused(replace(kTts, "name: vocoder", "name: talker"), "two stages are named 'talker'");
  expect_refused(replace(kTts, "reservation: 64MiB", "reservation: lots"), "reservation");
  expect_refused(
      replace(kTts, "    placement: worker\n", "    placement: worker\n    capacity: 0\n"),
      "capacity '0' must be an integer in 1..4096");
  expect_refused(replace(kTts, "    placement: worker\n",
                         "    placement: worker\n    artifacts: [{path: v.gguf, sha256: abc}]\n"),
                 "needs a pinned sha256");
  expect_refused(replace(kTts, "placement: worker", "placement: external"),
                 "kind external and placement external go together");
}

TEST(PipelineGraph, ExternalStagesNameTheirServerFlavourAndArguments) {
  const std::string ext =
      "stages:\n" +
      stage("ext", "external", "text.generate@1",
            "    placement: external\n    backend: external.openai.text.v1\n"
            "    server_flavour: llama-server\n    server_args: [-ngl, 99, --device, Vulkan0]\n") +
      "routes: [input.p -> ext.prompt, ext.text -> output.t]\n";
  auto p = parse_pipeline(ext, "/tmp");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->stages[0].server_flavour, "llama-server");
  EXPECT_EQ(p->stages[0].server_args,
            (std::vector<std::string>{"-ngl", "99", "--device", "Vulkan0"}));
  expect_refused(replace(ext, "flavour: llama-server", "flavour: vllm"),
                 "server_flavour 'vllm' is not one of edge-infer, llama-server");
  expect_refused(replace(ext, "-ngl, 99", "--port, 99"), "server_args may not set --port");
  expect_refused(replace(ext, "-ngl, 99", "--model=x.gguf"), "server_args may not set --model");
  expect_refused(replace(ext, "[-ngl, 99, --device, Vulkan0]", "[[-ngl]]"),
                 "server_args must be strings");
  expect_refused(replace(kTts, "    placement: worker\n",
                         "    placement: worker\n    server_args: [-ngl, 99]\n"),
                 "stage 'vocoder': server_flavour and server_args apply to external stages only");
}

TEST(PipelineGraph, MalformedFilesAreErrorsNotCrashes) {
  expect_refused("stages: [", "pipeline file");
  expect_refused("just a string", "must be a map");
  expect_refused("stages: []\nroutes: []\n", "'stages' must be a list of 1..64 stages");
  expect_refused(std::string(100000, '[') + std::string(100000, ']'),
                 "nested deeper than 64 levels");
  expect_refused(std::string(2 << 20, ' '), "bytes (at most");
}

}  // namespace
}  // namespace edge::pipeline
