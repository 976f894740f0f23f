// Where the CLI gets models and tokenizers from: a path given with -m, or the built-in
// demo model (random weights, written once to a cache file) when none is given.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace edge::cli {

// A GGUF file (model or vocab only), a Hugging Face directory, or a tokenizer.json.
Expected<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

// Path of the built-in demo model, writing it first if needed. Tells the user on stderr
// that its weights are random, so its text is noise.
// announce: say on stderr that the demo stands in for a model the user did not give.
Expected<std::string> demo_model_path(bool announce = true);
// Lets pipeline files name the demo files as demo:NAME (lm, vision-projector,
// audio-projector, qwen3-tts-talker, qwen3-tts-codec, outetts-lm, wavtokenizer, and
// edge-infer: this binary), resolved and pinned to their hashes at load.
void register_demo_artifacts();
// The demo's vision projector (gemma3 type, random weights, written once beside the demo
// model): 64x64 images, 16 image tokens of the demo model's width.
Expected<std::string> demo_vision_projector_path();
// The demo's audio projector (ultravox type, random weights, written once beside the demo
// model): a tiny Whisper-style encoder, 375 audio tokens per 30 s of the demo model's width.
Expected<std::string> demo_audio_projector_path();
// The demo's speech pair (random weights: its audio is noise): a Qwen3-TTS checkpoint
// directory of Qwen's layout at a small width and its 12 Hz codec (speech_tokenizer/),
// written once into the same cache directory.
Expected<std::pair<std::string, std::string>> demo_speech_paths();
// The second speech family's demo pair: an OuteTTS-0.2-shaped LM and a WavTokenizer decoder
// with 4096 codes (tts --family outetts).
Expected<std::pair<std::string, std::string>> demo_outetts_paths();

}  // namespace edge::cli
