// The CLI's model sources: tokenizers by path (through detect_model_format) and the
// built-in demo models (random weights, written once into the cache directory).
#include "model_source.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "convert/random_audio_projector.h"
#include "convert/random_model.h"
#include "convert/random_qwen3_tts.h"
#include "convert/random_qwen3_tts_codec.h"
#include "convert/random_vision_projector.h"
#include "convert/random_vocoder.h"
#include "formats/gguf.h"
#include "formats/model_format.h"
#include "pipeline/graph/artifact.h"
#include "tokenizer/outetts_tokens.h"

namespace edge::cli {
namespace fs = std::filesystem;

Expected<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  ASSIGN_OR_RETURN(ModelFormat format, detect_model_format(path));
  if (format == ModelFormat::kHfDir) {
    fs::path dir(path);
    if (!fs::exists(dir / "tokenizer.json"))
      return Status::not_found(path + ": no tokenizer.json in this directory");
    std::string cfg = fs::exists(dir / "tokenizer_config.json") ? (dir / "tokenizer_config.json").string() : "";
    auto tok = Tokenizer::from_tokenizer_json((dir / "tokenizer.json").string(), cfg);
    if (!tok) return tok.status();
    return std::make_unique<Tokenizer>(std::move(*tok));
  }
  if (format == ModelFormat::kGguf) {
    auto gguf = GgufFile::open(path);
    if (!gguf) return gguf.status();
    auto tok = Tokenizer::from_gguf(*gguf);
    if (!tok) return tok.status().with_context(path);
    return std::make_unique<Tokenizer>(std::move(*tok));
  }
  // Not a model format of its own: a tokenizer.json alone.
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") {
    auto tok = Tokenizer::from_tokenizer_json(path, "");
    if (!tok) return tok.status();
    return std::make_unique<Tokenizer>(std::move(*tok));
  }
  return Status::invalid_argument(
      path +
      ": no tokenizer in it (a GGUF file, a Hugging Face directory or a "
      "tokenizer.json has one; a llama2.c checkpoint has none)");
}

}  // namespace edge::cli

namespace edge::cli {

namespace {

// Where the demo models are written once per version of their shape (the file name carries
// the version).
Expected<fs::path> demo_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path dir = cache ? fs::path(cache) : home ? fs::path(home) / ".cache" : fs::temp_directory_path();
  dir /= "edge-infer";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error(dir.string() + ": " + ec.message());
  return dir;
}

}  // namespace

Expected<std::pair<std::string, std::string>> demo_speech_paths() {
  ASSIGN_OR_RETURN(fs::path dir, demo_dir());
  // Qwen3-TTS's layout (Qwen's names and ids, 16 codebooks of 2048, 12.5 frames a second)
  // at a small width; the codec is the small decoder with the same codebooks. Written into
  // a temporary folder renamed when complete, so an interrupted first start is redone.
  const fs::path talker = dir / "demo-qwen3-tts-v1", codec = talker / "speech_tokenizer";
  if (!fs::exists(talker / "config.json")) {
    const fs::path tmp = dir / "demo-qwen3-tts-v1.partial";
    std::error_code ec;
    fs::remove_all(tmp, ec);
    RandomQwen3TtsOptions t;
    t.n_layer = 4, t.n_embd = 256, t.n_head = 4, t.n_head_kv = 2, t.head_dim = 64, t.n_ff = 768;
    t.cp_n_layer = 2;
    t.codebook = 2048;
    t.text_hidden = 256;
    t.seed = 2026;
    RETURN_IF_ERROR(write_random_qwen3_tts(t, tmp.string()));
    RandomQwen3TtsCodecOptions c;
    c.hp = small_qwen3_tts_codec_hparams();
    c.hp.codebook_size = t.codebook;
    c.seed = 2026;
    RETURN_IF_ERROR(write_random_qwen3_tts_codec(c, (tmp / "speech_tokenizer").string()));
    fs::remove_all(talker, ec);
    fs::rename(tmp, talker, ec);
    if (ec) return Status::io_error(talker.string() + ": " + ec.message());
  }
  return std::make_pair(talker.string(), codec.string());
}

Expected<std::pair<std::string, std::string>> demo_outetts_paths() {
  ASSIGN_OR_RETURN(fs::path dir, demo_dir());
  const fs::path lm = dir / "demo-outetts-v2.gguf", voc = dir / "demo-wavtokenizer-v1.gguf";
  if (!fs::exists(lm)) {
    RandomModelOptions o;
    o.arch = "qwen2";
    o.outetts = "0.2";
    o.n_layer = 2;
    o.n_embd = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.n_vocab = 512;
    o.ctx = 8192;
    o.dtype = DType::F16;
    o.seed = 2026;
    RETURN_IF_ERROR(write_random_model(o, lm.string()));
  }
  if (!fs::exists(voc)) {
    RandomVocoderOptions v;
    v.n_vocab = kOuteTtsCodebook;
    v.n_features = 64;
    v.n_embd = 96;
    v.n_ff = 288;
    v.n_convnext = 2;
    v.n_groups = 32;
    v.seed = 2026;
    RETURN_IF_ERROR(write_random_vocoder(v, voc.string()));
  }
  return std::make_pair(lm.string(), voc.string());
}

Expected<std::string> demo_model_path(bool announce) {
  ASSIGN_OR_RETURN(fs::path dir, demo_dir());
  fs::path path = dir / "demo-llama-v1.gguf";
  if (announce)
    std::fprintf(stderr,
                 "edge-infer: no model given (-m): using the built-in demo model %s. Its weights are "
                 "random, so its text is noise.\n",
                 path.c_str());
  if (fs::exists(path)) return path.string();
  RandomModelOptions o;
  o.arch = "llama";
  o.n_layer = 4;
  o.n_embd = 256;
  o.n_head = 8;
  o.n_head_kv = 4;
  o.n_ff = 768;
  o.n_vocab = 2048;
  o.ctx = 2048;
  o.dtype = DType::F16;
  o.seed = 2026;
  RETURN_IF_ERROR(write_random_model(o, path.string()));
  return path.string();
}

Expected<std::string> demo_vision_projector_path() {
  ASSIGN_OR_RETURN(fs::path dir, demo_dir());
  fs::path path = dir / "demo-clip-gemma3-v1.gguf";
  if (fs::exists(path)) return path.string();
  RandomVisionProjectorOptions o;  // 64x64, patch 4, pool 4: 16 tokens
  o.n_out = 256;                   // demo_model_path()'s n_embd
  o.dtype = DType::F16;
  o.seed = 2026;
  RETURN_IF_ERROR(write_random_vision_projector(o, path.string()));
  return path.string();
}

Expected<std::string> demo_audio_projector_path() {
  ASSIGN_OR_RETURN(fs::path dir, demo_dir());
  fs::path path = dir / "demo-clip-ultravox-v1.gguf";
  if (fs::exists(path)) return path.string();
  RandomAudioProjectorOptions o;  // E 64, 2 blocks, 128 mel bins, stack 4
  o.n_out = 256;                  // demo_model_path()'s n_embd
  o.n_mm_ff = 512;
  o.dtype = DType::F16;
  o.seed = 2026;
  RETURN_IF_ERROR(write_random_audio_projector(o, path.string()));
  return path.string();
}

namespace {

// The demo files a pipeline file may name as demo:NAME (pipelines/README.md lists them).
Expected<std::string> resolve_demo_artifact(const std::string& name) {
  if (name == "lm") return demo_model_path(/*announce=*/false);
  if (name == "vision-projector") return demo_vision_projector_path();
  if (name == "audio-projector") return demo_audio_projector_path();
  if (name == "qwen3-tts-talker" || name == "qwen3-tts-codec") {
    ASSIGN_OR_RETURN(auto pair, demo_speech_paths());
    const std::string& dir = name == "qwen3-tts-talker" ? pair.first : pair.second;
    return (fs::path(dir) / "model.safetensors").string();
  }
  if (name == "outetts-lm" || name == "wavtokenizer") {
    ASSIGN_OR_RETURN(auto pair, demo_outetts_paths());
    return name == "outetts-lm" ? pair.first : pair.second;
  }
  if (name == "edge-infer") {  // this binary: an external stage served by our own `serve`
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return Status::io_error("/proc/self/exe: " + ec.message());
    return self.string();
  }
  return Status::not_found("no demo artifact '" + name +
                           "' (demo:lm, demo:vision-projector, demo:audio-projector, "
                           "demo:qwen3-tts-talker, demo:qwen3-tts-codec, demo:outetts-lm, "
                           "demo:wavtokenizer, demo:edge-infer)");
}

}  // namespace

void register_demo_artifacts() { pipeline::register_artifact_scheme("demo", resolve_demo_artifact); }

}  // namespace edge::cli
