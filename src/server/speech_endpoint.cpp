// POST /v1/audio/speech (OpenAI's create-speech): text in, audio out, from the server's
// speech graph (pipeline/prebuilt/speech_graph.h). Fields: model (any id; the graph is the
// server's), input (1..4096 characters, something speakable), voice (a speaker of a model that
// names them, e.g. Qwen3-TTS CustomVoice's; else a speaker profile --voices DIR/VOICE.json; an
// OpenAI voice name speaks with the model's first speaker or its own voice), language (an
// extension: "auto" or one of the model's languages), response_format wav | pcm (default wav), speed 0.25..4
// (resampled), stream_format "audio" (chunked transfer: each chunk as the vocoder produces
// it; a WAV stream then carries the unknown-length header) or "sse" (server-sent events:
// speech.audio.delta with the bytes in base64, then speech.audio.done, or an error event).
// Without stream_format the body is the whole file with exact sizes. Errors are 4xx with a
// clear message and never stop the server; an audio stream that fails after its first byte
// is cut short (no final chunk), an SSE stream ends with an error event.
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <memory>

#include "core/mapped_file.h"
#include "pipeline/prebuilt/speech_graph.h"
#include "pipeline/stages/outetts/outetts_prompt.h"
#include "server/connection_watch.h"
#include "server/server_context.h"
#include "server/speech_audio.h"
#include "server/sse.h"

namespace edge::server {
namespace {

using nlohmann::json;

constexpr size_t kMaxInputChars = 4096;
constexpr int32_t kSampleRate = 24000;  // audio.pcm@1
const char* const kVoices[] = {"alloy", "ash",  "ballad",  "coral", "echo",  "fable",
                               "onyx",  "nova", "sage",    "shimmer", "verse"};

struct SpeechRequest {
  std::string input, voice, format = "wav", language;
  // The graph's "voice" input: a speaker's name, or a speaker profile (JSON); "" for the
  // model's own (or first) voice.
  std::string profile;
  double speed = 1.0;
  bool stream = false, sse = false;
};

// Counts UTF-8 characters (continuation bytes excluded).
size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string names_of(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A model that names its speakers: the voice is one of them (OpenAI's names: the first).
std::optional<ApiError> resolve_named_voice(const SpeechVoices& voices, SpeechRequest& r) {
  for (const std::string& s : voices.speakers)
    if (same_name(s, r.voice)) {
      r.profile = s;
      return std::nullopt;
    }
  if (std::find(std::begin(kVoices), std::end(kVoices), r.voice) != std::end(kVoices)) return std::nullopt;
  return ApiError::bad_request(fmt::format("unknown voice '{}': this model's speakers are {} (OpenAI's "
                                           "names speak with {})",
                                           r.voice, names_of(voices.speakers), voices.speakers.front()),
                               "voice", "unknown_voice");
}

std::optional<ApiError> resolve_language(const SpeechVoices& voices, SpeechRequest& r) {
  if (r.language.empty() || same_name(r.language, "auto")) return r.language.clear(), std::nullopt;
  for (const std::string& l : voices.languages)
    if (same_name(l, r.language)) return std::nullopt;
  if (voices.languages.empty())
    return ApiError::bad_request(fmt::format("language '{}': this speech model takes no language", r.language),
                                 "language");
  return ApiError::bad_request(fmt::format("unknown language '{}' (auto, {})", r.language, names_of(voices.languages)),
                               "language", "unknown_language");
}

// The voice's speaker profile: voices_dir/VOICE.json when there is one (a name of letters,
// digits, '-' and '_' only), else one of OpenAI's names (the model's own voice).
std::optional<ApiError> resolve_voice(const std::string& voices_dir, SpeechRequest& r) {
  const bool plain = !r.voice.empty() && r.voice.size() <= 64 &&
                     std::all_of(r.voice.begin(), r.voice.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                     });
  if (plain && !voices_dir.empty()) {
    const std::string path = voices_dir + "/" + r.voice + ".json";
    if (std::filesystem::exists(path)) {
      auto text = read_text_file(path);
      auto sp = text ? pipeline::parse_speaker_json(*text) : Expected<pipeline::Speaker>(text.status());
      if (!sp) return ApiError::bad_request(fmt::format("voice '{}': {}", r.voice, sp.status().message()), "voice");
      r.profile = std::move(*text);
      return std::nullopt;
    }
  }
  if (std::find(std::begin(kVoices), std::end(kVoices), r.voice) != std::end(kVoices)) return std::nullopt;
  return ApiError::bad_request(fmt::format("unknown voice '{}' (alloy, ash, ballad, coral, echo, fable, onyx, "
                                           "nova, sage, shimmer, verse{})",
                                           r.voice, voices_dir.empty() ? "" : ", or a profile in " + voices_dir),
                               "voice", "unknown_voice");
}

std::optional<ApiError> parse_speech(const std::string& body, const ServerContext& ctx, SpeechRequest& r) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception&) {
    return ApiError::bad_request("the body is not valid JSON");
  }
  if (!j.is_object()) return ApiError::bad_request("the body must be a JSON object");
  if (!j.contains("model") || !j["model"].is_string() || j["model"].get<std::string>().empty())
    return ApiError::bad_request("'model' is required (a string)", "model");
  if (!j.contains("input") || !j["input"].is_string())
    return ApiError::bad_request("'input' is required (a string)", "input");
  r.input = j["input"].get<std::string>();
  if (r.input.empty()) return ApiError::bad_request("'input' is empty: nothing to speak", "input");
  if (utf8_chars(r.input) > kMaxInputChars)
    return ApiError::bad_request(fmt::format("'input' is {} characters; at most {}", utf8_chars(r.input),
                                             kMaxInputChars),
                                 "input", "input_too_long");
  if (pipeline::normalize_tts_text(r.input).empty())
    return ApiError::bad_request("'input' has no words to speak (letters or numbers)", "input");
  if (!j.contains("voice") || !j["voice"].is_string())
    return ApiError::bad_request("'voice' is required (a string)", "voice");
  r.voice = j["voice"].get<std::string>();
  const SpeechVoices& voices = ctx.speech_voices;
  if (auto e = voices.speakers.empty() ? resolve_voice(ctx.options.voices_dir, r) : resolve_named_voice(voices, r))
    return e;
  if (j.contains("language")) {
    if (!j["language"].is_string()) return ApiError::bad_request("'language' must be a string", "language");
    r.language = j["language"].get<std::string>();
  }
  if (auto e = resolve_language(voices, r)) return e;
  if (j.contains("response_format")) {
    if (!j["response_format"].is_string()) return ApiError::bad_request("'response_format' must be a string", "response_format");
    r.format = j["response_format"].get<std::string>();
    if (r.format != "wav" && r.format != "pcm")
      return ApiError::bad_request(fmt::format("response_format '{}' is not supported (wav, pcm)", r.format),
                                   "response_format", "unsupported_format");
  }
  if (j.contains("speed")) {
    if (!j["speed"].is_number()) return ApiError::bad_request("'speed' must be a number", "speed");
    r.speed = j["speed"].get<double>();
    if (!(r.speed >= 0.25 && r.speed <= 4.0))
      return ApiError::bad_request(fmt::format("speed {} is outside 0.25..4.0", r.speed), "speed");
  }
  if (j.contains("stream_format")) {
    const std::string sf = j["stream_format"].is_string() ? j["stream_format"].get<std::string>() : "";
    if (sf != "audio" && sf != "sse")
      return ApiError::bad_request("stream_format must be \"audio\" or \"sse\"", "stream_format");
    r.stream = true;
    r.sse = sf == "sse";
  }
  return std::nullopt;
}

// One streamed utterance: the chunked provider pulls its events.
struct SpeechStream {
  Lifecycle::Ticket in_flight;
  pipeline::PipelineRuntime* rt = nullptr;
  pipeline::PipelineHandle h;
  pipeline::SpeechFigureSet* figures = nullptr;
  pipeline::SpeechTimeline timeline;
  SpeedChanger speed{1.0};
  std::unique_ptr<ConnectionWatch> watch;
  bool wav = true, sse = false, header_sent = false, ended = false;

  // Audio bytes as the stream's framing wants them: raw, or one SSE delta event.
  bool write_audio(httplib::DataSink& sink, const std::string& bytes) const {
    if (bytes.empty()) return true;
    const std::string out =
        sse ? sse_data({{"type", "speech.audio.delta"}, {"audio", base64(bytes)}}) : bytes;
    return sink.write(out.data(), out.size());
  }
};

// Writes what the next event carries; false ends the response (done, failed, client gone).
bool speech_step(SpeechStream& st, httplib::DataSink& sink) {
  if (st.wav && !st.header_sent) {
    st.header_sent = true;
    if (!st.write_audio(sink, wav_header(kSampleRate, -1))) return (void)st.rt->cancel(st.h), false;
  }
  auto e = st.rt->next(st.h, std::chrono::milliseconds(100));
  if (!e.ok()) {
    if (e.status().code() != StatusCode::kDeadlineExceeded) return false;
    if (st.watch && st.watch->client_gone()) return (void)st.rt->cancel(st.h), false;
    return true;
  }
  if (e->end_of_request) {
    st.ended = true;
    if (!e->error.ok() && !st.sse) return false;  // cut short: the client sees no final chunk
    std::string last;
    if (!e->error.ok()) {
      json err = api_error_from_status(e->error).to_json();
      err["type"] = "error";
      last = sse_data(err);
    } else {
      st.figures->add(st.timeline.figures());
      if (st.sse) last = sse_data({{"type", "speech.audio.done"}});
    }
    if (!last.empty() && !sink.write(last.data(), last.size())) return false;
    sink.done();
    return true;
  }
  if (e->port != "audio" || e->value.samples.empty()) return true;
  st.timeline.chunk(static_cast<int64_t>(e->value.samples.size()));
  if (!st.write_audio(sink, pcm_s16le(st.speed.push(e->value.samples))))
    return (void)st.rt->cancel(st.h), false;
  return true;
}

void answer_whole(ServerContext& ctx, const httplib::Request& req, const SpeechRequest& r,
                  httplib::Response& res) {
  SpeedChanger speed(r.speed);
  std::string pcm;
  ConnectionWatch watch({req.local_addr, req.remote_addr, req.local_port, req.remote_port});
  auto f = pipeline::speak(
      *ctx.speech, r.input, r.profile,
      [&](const std::vector<float>& chunk) {
        pcm += pcm_s16le(speed.push(chunk));
        return true;
      },
      [&] { return watch.client_gone() || ctx.lifecycle.past_drain_deadline(); }, r.language);
  if (!f) {
    if (f.status().code() == StatusCode::kCancelled && watch.client_gone())
      ctx.speech_figures.add_cancelled();
    return send_error(res, api_error_from_status(f.status()));
  }
  ctx.speech_figures.add(*f);
  res.status = 200;
  if (r.format == "wav")
    res.set_content(wav_header(kSampleRate, static_cast<int64_t>(pcm.size())) + pcm, "audio/wav");
  else
    res.set_content(pcm, "audio/pcm");
}

}  // namespace

void handle_speech(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (!ctx.speech) {
    ApiError e;
    e.http_status = 404, e.type = "not_found_error";
    e.message = "this server has no speech pipeline (serve with no -m, or --speech-model and --vocoder)";
    return send_error(res, e);
  }
  SpeechRequest r;
  if (auto e = parse_speech(req.body, ctx, r)) return send_error(res, *e);
  auto ticket = ctx.lifecycle.enter();
  if (!ticket) return send_error(res, not_ready_error(ctx.lifecycle.state()));
  if (!r.stream) return answer_whole(ctx, req, r, res);
  auto h = ctx.speech->submit(pipeline::speech_inputs(r.input, r.profile, r.language));
  if (!h) return send_error(res, api_error_from_status(h.status()));
  auto st = std::make_shared<SpeechStream>();
  st->in_flight = std::move(ticket);
  st->rt = ctx.speech;
  st->h = *h;
  st->figures = &ctx.speech_figures;
  st->speed = SpeedChanger(r.speed);
  st->wav = r.format == "wav";
  st->sse = r.sse;
  st->watch = std::make_unique<ConnectionWatch>(
      ConnectionEnds{req.local_addr, req.remote_addr, req.local_port, req.remote_port});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      st->sse ? "text/event-stream" : st->wav ? "audio/wav" : "audio/pcm",
      [st](size_t, httplib::DataSink& sink) { return speech_step(*st, sink); },
      [st](bool) {
        if (st->ended) return;
        (void)st->rt->cancel(st->h);  // the client left early: drain the request's end
        st->figures->add_cancelled();
        for (int i = 0; i < 600; ++i) {
          auto e = st->rt->next(st->h, std::chrono::milliseconds(100));
          if (!e.ok() && e.status().code() != StatusCode::kDeadlineExceeded) break;
          if (e.ok() && e->end_of_request) break;
        }
      });
}

void handle_voices(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  if (!ctx.speech) {
    ApiError e;
    e.http_status = 404, e.type = "not_found_error";
    e.message = "this server has no speech pipeline";
    return send_error(res, e);
  }
  const SpeechVoices& v = ctx.speech_voices;
  json data = json::array();
  auto add = [&](const std::string& id, const char* kind) {
    data.push_back({{"id", id}, {"object", "voice"}, {"kind", kind}});
  };
  if (!v.speakers.empty()) {
    for (const std::string& s : v.speakers) add(s, "speaker");
  } else {
    std::error_code ec;
    if (!ctx.options.voices_dir.empty())
      for (const auto& f : std::filesystem::directory_iterator(ctx.options.voices_dir, ec))
        if (f.path().extension() == ".json") add(f.path().stem().string(), "profile");
  }
  for (const char* name : kVoices) add(name, v.speakers.empty() ? "model_voice" : "alias");
  json languages = json::array({"auto"});
  for (const std::string& l : v.languages) languages.push_back(l);
  send_json(res, 200,
            {{"object", "list"},
             {"data", data},
             {"default", v.speakers.empty() ? "" : v.speakers.front()},
             {"languages", languages}});
}

}  // namespace edge::server
