// Speech out: the text-to-speech graph (text -> speech codes -> decoder -> 24 kHz PCM) and
// the figures of one utterance as a listener would hear it. Two families:
//
// Qwen3-TTS (a checkpoint directory; the default speech path):
//   input.text -> talker.text, input.voice -> talker.voice, input.language -> talker.language
//                       (qwen3_tts_talker, speech.codes@3: frames of 16 codes, in process)
//   talker.codes -> vocoder.codes  (qwen3_tts_codec, audio.pcm@2: the 12 Hz codec decoder,
//                                   in process or worker)
// OuteTTS (a GGUF speech-code LM):
//   input.text -> talker.text, input.voice -> talker.voice
//                               (speech_codes, speech.codes@2: an OuteTTS LM, in process)
//   talker.codes -> vocoder.codes   (vocoder, audio.pcm@1: WavTokenizer, in process or worker)
// and in both: vocoder.pcm -> output.audio
//
// Figures from chunk arrival times (SpeechTimeline): time to first audio (TTFA), real-time
// factor (RTF: wall time from the request to its last sample over the audio's duration;
// above 1.0 the pipeline cannot keep up), and a simulated player that starts on the first
// chunk: how often it runs dry (underruns, and for how long) and the prebuffer that would
// have avoided every underrun.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <functional>

#include "pipeline/graph/executor.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

enum class SpeechFamily { kQwen3Tts, kOuteTts };

// Qwen3-TTS for a checkpoint directory (config.json with model_type qwen3_tts) or its
// model.safetensors; OuteTTS otherwise (a GGUF file).
SpeechFamily speech_family(const std::string& talker_model);

// The Qwen3-TTS codec that belongs to a checkpoint: its speech_tokenizer/ folder.
std::string default_qwen3_tts_codec(const std::string& talker_model);

struct SpeechGraphOptions {
  // Qwen3-TTS: the checkpoint directory and the 12 Hz tokenizer's directory (empty: the
  // checkpoint's speech_tokenizer/). OuteTTS: the LM and the WavTokenizer GGUF files.
  std::string talker_model, vocoder_model;
  int32_t capacity = 2;
  Placement vocoder_placement = Placement::kInProcess;
  VocoderSettings vocoder;  // window 0: exact (the utterance at its end)
  int64_t talker_ctx = 4096;
  // Also route talker.codes -> output.codes, so that speak() can time the talker alone
  // (bench-tts): the moment of its last code against the audio's duration.
  bool codes_out = false;
};

// The graph in code (what `tts` and the server's speech endpoint run); the same graph can be
// written as a pipeline file. The vocoder reserves what its file and its buffers need.
Expected<PipelineSpec> speech_pipeline(const SpeechGraphOptions& o);

// One utterance's chunks as they arrived.
class SpeechTimeline {
 public:
  explicit SpeechTimeline(int32_t sample_rate = 24000);
  void start();  // the request was sent
  void chunk(int64_t n_samples);  // a chunk of audio arrived now
  // For tests and replays: a chunk that arrived `at` after start().
  void chunk_at(double at_seconds, int64_t n_samples);
  // The talker's codes arrived now (a graph that routes them out): its pace, apart from
  // the decoder's.
  void codes(int64_t n_codes);

  struct Figures {
    double ttfa_s = 0;         // start -> first sample
    double total_s = 0;        // start -> last sample
    double audio_s = 0;        // duration of the audio
    double rtf = 0;            // total_s / audio_s
    int32_t underruns = 0;     // times a player starting at the first chunk ran dry
    double stall_s = 0;        // how long it stood still in all
    double prebuffer_s = 0;    // buffering before playback that avoids every underrun
    int64_t samples = 0, chunks = 0;
    // When the talker's codes are routed out: how many, when the last came, and that over
    // the audio's duration (the talker's own real-time factor; 0 when not routed).
    int64_t codes = 0;
    double codes_s = 0, talker_rtf = 0;
  };
  Figures figures() const;

 private:
  int32_t rate_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<std::pair<double, int64_t>> arrivals_;  // seconds after start, samples
  int64_t codes_ = 0;
  double last_code_s_ = 0;
};

nlohmann::json figures_json(const SpeechTimeline::Figures& f);

// Figures of many utterances: p50/p95 of each (bench-tts, /metrics).
class SpeechFigureSet {
 public:
  void add(const SpeechTimeline::Figures& f);
  // An utterance cancelled because its client left before the end (a probe reads this to
  // tell that a hang-up reached the pipeline).
  void add_cancelled();
  nlohmann::json summary_json() const;  // {"n", "cancelled", "ttfa_s": {"p50","p95"}, ...}
  std::string metrics_text() const;     // Prometheus lines, edge_tts_*
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<SpeechTimeline::Figures> all_;
  uint64_t cancelled_ = 0;
};

// The graph inputs of one utterance: its text and voice (a speaker profile's JSON; "" for
// the model's own voice).
// For Qwen3-TTS the voice is a speaker's name ("": the model's first) and the language a
// codec_language_id name ("" or "auto": the model decides); OuteTTS ignores the language.
std::map<std::string, PortValue> speech_inputs(const std::string& text, const std::string& voice = "",
                                               const std::string& language = "");

// One utterance through a speech graph (inputs "text" and "voice", output "audio"): `on_audio` gets
// every chunk of samples as it arrives (returning false cancels the request: what follows
// is dropped); `stop` is polled while waiting (true cancels too). The figures on success;
// the request's error (kCancelled when stopped) otherwise.
Expected<SpeechTimeline::Figures> speak(PipelineRuntime& rt, const std::string& text,
                                        const std::string& voice,
                                        const std::function<bool(const std::vector<float>&)>& on_audio,
                                        const std::function<bool()>& stop = nullptr,
                                        const std::string& language = "");

// The q-quantile (0..1) of `v` by nearest rank (0 for none).
double percentile(std::vector<double> v, double q);

}  // namespace edge::pipeline
