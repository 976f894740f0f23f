// Harmony (GPT-OSS) on the tokenizer side: which vocabularies speak it, the end-of-
// generation rules (<|return|> and <|call|> end a reply, <|end|> only a message), the
// structural tokens surviving decoding as text, the made-up harmony vocabulary, and our
// harmony chat template rendered by our Jinja engine (the constructs GPT-OSS's own
// template uses: recursive macros with defaults, namespace(), slicing, `in` on mappings
// and strings, type tests, tojson, strftime_now, raise_exception).
#include "tokenizer/harmony.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

#include "convert/synthetic_vocab.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_io.h"

namespace edge {
namespace {

Tokenizer harmony_tokenizer() {
  auto v = make_synthetic_harmony_vocab(1200, 7);
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  auto tok = Tokenizer::from_vocab(std::move(*v));
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(*tok);
}

TEST(HarmonyVocab, DetectedFromItsSpecialTokens) {
  auto v = make_synthetic_harmony_vocab(1200, 7);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(is_harmony_vocab(*v));
  EXPECT_EQ(v->n_tokens(), 1200);
  EXPECT_EQ(v->pre, "gpt-4o");
  // The same tokens as plain (normal) pieces do not make a harmony vocabulary.
  Vocab plain = *v;
  plain.types[plain.find(harmony::kCall)] = TokenType::kNormal;
  EXPECT_FALSE(is_harmony_vocab(plain));
  auto spm = make_synthetic_vocab(600, 1);
  ASSERT_TRUE(spm.ok());
  EXPECT_FALSE(is_harmony_vocab(*spm));
}

TEST(HarmonyVocab, ReturnAndCallEndGenerationEndDoesNot) {
  const Tokenizer tok = harmony_tokenizer();
  const Vocab& v = tok.vocab();
  EXPECT_TRUE(tok.is_eog(v.find(harmony::kReturn)));
  EXPECT_TRUE(tok.is_eog(v.find(harmony::kCall)));
  EXPECT_FALSE(tok.is_eog(v.find(harmony::kEnd)));
  EXPECT_FALSE(tok.is_eog(v.find(harmony::kMessage)));
  EXPECT_EQ(tok.eos_id(), v.find(harmony::kReturn));
}

TEST(HarmonyVocab, StructuralTokensDecodeAsTextAndEncodeAsOneId) {
  const Tokenizer tok = harmony_tokenizer();
  const Vocab& v = tok.vocab();
  const std::string text =
      "<|channel|>analysis<|message|>Think about "
      "it.<|end|><|start|>assistant<|channel|>final<|message|>It's 42!";
  const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/true);
  for (const char* t : {harmony::kChannel, harmony::kMessage, harmony::kEnd, harmony::kStart})
    EXPECT_NE(std::find(ids.begin(), ids.end(), v.find(t)), ids.end()) << t;
  EXPECT_NE(ids.front(), tok.bos_id());  // GPT-OSS adds no BOS
  // Decoding without special tokens (what the server streams) keeps the structure.
  EXPECT_EQ(tok.decode(ids), text);
  Tokenizer::StreamDecoder dec(tok);
  std::string streamed;
  for (int32_t id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  EXPECT_EQ(streamed, text);
  // <|return|> and <|call|> stay control tokens: hidden unless asked for.
  EXPECT_EQ(tok.decode({v.find(harmony::kReturn)}), "");
  EXPECT_EQ(tok.decode({v.find(harmony::kReturn)}, /*special=*/true), harmony::kReturn);
}

TEST(HarmonyVocab, ByteLevelBpeRoundTripsText) {
  const Tokenizer tok = harmony_tokenizer();
  for (const std::string s :
       {"Hello, World! 12345", "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC", "a\n\n  b\tc"}) {
    const auto ids = tok.encode(s, false);
    EXPECT_EQ(tok.decode(ids), s);
  }
  EXPECT_FALSE(make_synthetic_harmony_vocab(100, 1).ok());
}

// What a made-up GPT-OSS model carries (make-model writes GGUF and HF directories): the
// vocabulary and template survive both files, with the same ids and the same rules.
TEST(HarmonyVocab, SurvivesGgufAndTokenizerJson) {
  auto v = make_synthetic_harmony_vocab(1200, 7);
  ASSERT_TRUE(v.ok());
  const Tokenizer mem = harmony_tokenizer();
  const std::string text =
      "<|start|>user<|message|>Hello WORLD, it's 12345!<|end|><|start|>assistant";
  const std::vector<int32_t> want = mem.encode(text, false);

  GgufWriter w;
  ASSERT_TRUE(write_vocab_gguf(*v, w).ok());
  w.set_string("tokenizer.chat_template", harmony_chat_template());
  const std::string path =
      testing::TempDir() + "/edge_harmony_vocab_" + std::to_string(getpid()) + ".gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto from_gguf = Tokenizer::from_gguf(*g);
  std::remove(path.c_str());
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().to_string();
  EXPECT_TRUE(is_harmony_vocab(from_gguf->vocab()));
  EXPECT_EQ(from_gguf->vocab().pre, "gpt-4o");
  EXPECT_EQ(from_gguf->encode(text, false), want);
  EXPECT_TRUE(from_gguf->is_eog(v->find(harmony::kCall)));
  EXPECT_FALSE(from_gguf->is_eog(v->find(harmony::kEnd)));
  EXPECT_EQ(from_gguf->chat_template(), harmony_chat_template());

  auto from_json =
      Tokenizer::from_tokenizer_json_text(vocab_to_tokenizer_json(*v).dump(), "", "harmony");
  ASSERT_TRUE(from_json.ok()) << from_json.status().to_string();
  EXPECT_TRUE(is_harmony_vocab(from_json->vocab()));
  EXPECT_EQ(from_json->encode(text, false), want);
  EXPECT_TRUE(from_json->is_eog(v->find(harmony::kReturn)));
  EXPECT_FALSE(from_json->is_eog(v->find(harmony::kEnd)));
}

// Renders our harmony template; the date line (strftime_now) is replaced by "DATE".
std::string render(const nlohmann::ordered_json& vars) {
  auto t = ChatTemplate::parse(harmony_chat_template());
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return "";
  auto out = t->render_variables(vars);
  if (!out.ok()) return "ERROR: " + out.status().message();
  return std::regex_replace(*out, std::regex("Current date: [0-9]{4}-[0-9]{2}-[0-9]{2}"),
                            "Current date: DATE");
}

const char kSystem[] =
    "<|start|>system<|message|>You are a helpful assistant.\nCurrent date: DATE\n\nReasoning: "
    "medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.";

TEST(HarmonyTemplate, PlainConversation) {
  nlohmann::ordered_json vars = {
      {"messages",
       {{{"role", "user"}, {"content", "Hi"}},
        {{"role", "assistant"}, {"content", "Hello!"}, {"thinking", "dropped in history"}},
        {{"role", "user"}, {"content", "2+2?"}}}},
      {"add_generation_prompt", true}};
  EXPECT_EQ(render(vars), std::string(kSystem) +
                              "<|end|><|start|>user<|message|>Hi<|end|>"
                              "<|start|>assistant<|channel|>final<|message|>Hello!<|end|>"
                              "<|start|>user<|message|>2+2?<|end|><|start|>assistant");
  vars["reasoning_effort"] = "high";
  vars["model_identity"] = "You are Edge.";
  vars["messages"][0] = {{"role", "system"}, {"content", "Be brief."}};
  const std::string out = render(vars);
  EXPECT_NE(out.find("<|start|>system<|message|>You are Edge.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Reasoning: high\n"), std::string::npos) << out;
  EXPECT_NE(out.find("<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>"),
            std::string::npos)
      << out;
}

TEST(HarmonyTemplate, ToolsCallsAndResults) {
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
      "parameters": {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": ["integer", "null"]},
        "stops": {"type": "array", "items": {"type": "object", "required": ["name"],
                  "properties": {"name": {"type": "string"}, "lat": {"type": "number", "nullable": true}}}}}}}},
    {"type": "function", "function": {"name": "now"}}])");
  nlohmann::ordered_json vars = {
      {"tools", tools},
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Paris?"}},
        {{"role", "assistant"},
         {"content", ""},
         {"thinking", "Need the tool."},
         {"tool_calls",
          {{{"type", "function"},
            {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}},
        {{"role", "tool"}, {"content", "{\"temp\": 21}"}}}},
      {"add_generation_prompt", true}};
  const std::string want =
      std::string(kSystem) +
      "\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
      "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n"
      "// Weather of a city\ntype get_weather = (_: {\n// City name\ncity: string,\n"
      "unit?: \"c\" | \"f\", // default: \"c\",\ndays?: integer | null,\n"
      "stops?: { name: string, lat?: number | null }[],\n}) => any;\n\n"
      "type now = () => any;\n\n} // namespace functions<|end|>"
      "<|start|>user<|message|>Weather in Paris?<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>"
      "{\"city\": \"Paris\"}<|call|>"
      "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temp\": "
      "21}<|end|>"
      "<|start|>assistant";
  EXPECT_EQ(render(vars), want);
  // With a final answer after the call, the analysis before the call is dropped.
  vars["messages"].push_back({{"role", "assistant"}, {"content", "21 degrees."}});
  vars["add_generation_prompt"] = false;
  const std::string done = render(vars);
  EXPECT_EQ(done.find("Need the tool."), std::string::npos) << done;
  EXPECT_NE(done.find("<|channel|>final<|message|>21 degrees.<|return|>"), std::string::npos)
      << done;
}

TEST(HarmonyTemplate, RefusesMisplacedChannelsAndOrphanToolResults) {
  nlohmann::ordered_json vars = {
      {"messages", {{{"role", "assistant"}, {"content", "<|channel|>final<|message|>x"}}}},
      {"add_generation_prompt", true}};
  EXPECT_NE(render(vars).find("ERROR: "), std::string::npos);
  vars["messages"] = {{{"role", "user"}, {"content", "hi"}}, {{"role", "tool"}, {"content", "1"}}};
  const std::string out = render(vars);
  EXPECT_NE(out.find("a tool message must follow an assistant tool call"), std::string::npos)
      << out;
}

TEST(HarmonyTemplate, RenderedPromptTokenizesToHarmonyTokens) {
  const Tokenizer tok = harmony_tokenizer();
  const std::string prompt = render(
      {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"add_generation_prompt", true}});
  const auto ids = tok.encode(prompt, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.vocab().find(harmony::kStart)), 3);
  EXPECT_EQ(tok.decode(ids), prompt);
}

}  // namespace
}  // namespace edge
