// edge-infer pipeline plan FILE [--ctx N] [--memory-limit M]
//   The execution plan of a pipeline file as JSON: per stage its backend, requested device,
//   verified artifact hashes, capacity, reserved bytes and the RAM available before it;
//   exit 3 (and the reason on stderr) when the stages do not fit together.
// edge-infer pipeline run FILE --input NAME=TEXT|NAME=ids:1,2,3|NAME=image:PNG|NAME=wav:WAV
//                        [-n N] [--ctx N] [--events]
//   One request through the graph: text outputs stream to stdout (--events: one JSON line
//   per event, then the runtime's state: ledger, loaded RSS, placement, generation).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "commands.h"
#include "core/memory_ledger.h"
#include "core/mapped_file.h"
#include "formats/image.h"
#include "formats/wav.h"
#include "harness/provenance.h"
#include "model/audio_input.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/plan.h"
#include "plan_options.h"

namespace edge::cli {
namespace {

// The memory this process may use, with --memory-limit (empty: none) taken into account.
struct PipelinePlanArgs {
  std::string file;
  int64_t ctx = 4096;
  std::string memory_limit;
};

int run_pipeline_plan(const PipelinePlanArgs& a) {
  auto spec = pipeline::load_pipeline_file(a.file);
  if (!spec) return report_error(spec.status());
  auto limit = memory_limit_flag(a.memory_limit);
  if (!limit) return report_error(limit.status());
  pipeline::PipelinePlanOptions o;
  o.ctx = a.ctx;
  if (a.ctx < 1) return report_error(Status::invalid_argument("--ctx must be at least 1"));
  auto plan = pipeline::plan_pipeline(*spec, *limit, o);
  if (!plan) return report_error(plan.status());
  std::printf("%s\n", plan->to_json().dump(2).c_str());
  if (!plan->admitted) return report_error(Status::resource_exhausted(plan->refusal));
  return 0;
}

struct PipelineRunArgs {
  std::string file;
  std::vector<std::string> inputs;
  int64_t ctx = 4096;
  int32_t max_tokens = 64;
  int threads = 0;
  std::string memory_limit;
  bool events = false;
  std::string wav;  // the audio reaching the graph's outputs, as a 16-bit WAV
  std::string archive;  // a folder for the run's evidence and outputs
};

// The evidence of one run, kept as the seed keeps one per run: the pipeline file as it was,
// every event, the runtime state (per stage: requested and actual placement, backend
// version, artifacts with their verified hashes, reserved and measured bytes, generation),
// the machine and build, and the outputs (text.txt, audio.wav).
Status write_archive(const PipelineRunArgs& a, const nlohmann::json& events, const nlohmann::json& state,
                     const Status& result, const std::string& text, const std::vector<float>& audio) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.archive, ec);
  if (ec) return Status::io_error(a.archive + ": " + ec.message());
  const fs::path dir(a.archive);
  fs::copy_file(a.file, dir / "pipeline.yaml", fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::io_error((dir / "pipeline.yaml").string() + ": " + ec.message());
  std::string lines;
  for (const auto& e : events) lines += e.dump() + "\n";
  RETURN_IF_ERROR(write_file((dir / "events.jsonl").string(), lines.data(), lines.size()));
  const nlohmann::json run = {{"pipeline_file", fs::absolute(a.file).string()},
                              {"inputs", a.inputs},
                              {"max_tokens", a.max_tokens},
                              {"ctx", a.ctx},
                              {"result", result.ok() ? "ok" : result.to_string()},
                              {"provenance", machine_provenance()},
                              {"state", state}};
  const std::string body = run.dump(2) + "\n";
  RETURN_IF_ERROR(write_file((dir / "run.json").string(), body.data(), body.size()));
  if (!text.empty()) RETURN_IF_ERROR(write_file((dir / "text.txt").string(), text.data(), text.size()));
  if (!audio.empty()) RETURN_IF_ERROR(write_wav16((dir / "audio.wav").string(), audio, 24000));
  std::fprintf(stderr, "edge-infer: archived the run in %s\n", a.archive.c_str());
  return Status();
}

Expected<std::vector<uint8_t>> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::not_found(path + ": cannot open");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// NAME=image:PATH (PNG or JPEG: u8 [height, width, 3]) or NAME=wav:PATH (16 kHz mono PCM),
// each with the file's bytes.
Status media_input(const std::string& value, pipeline::PortValue* v) {
  const bool image = value.rfind("image:", 0) == 0;
  const std::string path = value.substr(image ? 6 : 4);
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_bytes(path));
  if (image) {
    auto img = decode_image(bytes);
    if (!img) return img.status().with_context(path);
    v->pixels = std::move(img->rgb), v->width = img->width, v->height = img->height;
    v->encoding = sniff_image_format(bytes);
  } else {
    double seconds = 0;
    auto pcm = wav_to_pcm16k(bytes.data(), bytes.size(), kDefaultMaxAudioSeconds, &seconds);
    if (!pcm) return pcm.status().with_context(path);
    v->samples = std::move(*pcm);
    v->encoding = "wav";
  }
  // The file as it is too, for a stage that hands it to a server (chat.generate@1).
  v->encoded.assign(bytes.begin(), bytes.end());
  return Status();
}

Expected<std::map<std::string, pipeline::PortValue>> parse_inputs(
    const std::vector<std::string>& args) {
  std::map<std::string, pipeline::PortValue> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::invalid_argument("--input '" + a +
                                      "' is not NAME=TEXT, NAME=ids:1,2,3, NAME=image:PATH or NAME=wav:PATH");
    pipeline::PortValue v;
    const std::string value = a.substr(eq + 1);
    if (value.rfind("ids:", 0) == 0) {
      ASSIGN_OR_RETURN(v.tokens, parse_id_list(value.substr(4)));
    } else if (value.rfind("image:", 0) == 0 || value.rfind("wav:", 0) == 0) {
      RETURN_IF_ERROR(media_input(value, &v).with_context("--input " + a.substr(0, eq)));
    } else {
      v.text = value;
    }
    out[a.substr(0, eq)] = std::move(v);
  }
  return out;
}

nlohmann::json event_json(const pipeline::StageEvent& e) {
  nlohmann::json j = {{"epoch", e.epoch},       {"seq", e.seq},
                      {"terminal", e.terminal}, {"worker_generation", e.worker_generation},
                      {"stage", e.stage},       {"output", e.port}};
  if (!e.value.tokens.empty()) j["tokens"] = e.value.tokens;
  if (!e.value.text.empty()) j["text"] = e.value.text;
  if (!e.value.samples.empty()) j["samples"] = e.value.samples.size();  // the PCM goes to --wav
  if (!e.error.ok()) j["error"] = e.error.to_string();
  return j;
}

int run_pipeline_run(const PipelineRunArgs& a) {
  auto spec = pipeline::load_pipeline_file(a.file);
  if (!spec) return report_error(spec.status());
  auto inputs = parse_inputs(a.inputs);
  if (!inputs) return report_error(inputs.status());
  auto limit = memory_limit_flag(a.memory_limit);
  if (!limit) return report_error(limit.status());
  pipeline::RamLedger ledger(limit->bytes > 0 ? limit->bytes : INT64_MAX,
                             limit->source.empty() ? "no limit" : limit->source);
  pipeline::PipelineRunOptions o;
  o.ctx = a.ctx, o.max_tokens = a.max_tokens, o.n_threads = a.threads;
  auto rt = pipeline::PipelineRuntime::start(*spec, ledger, o);
  if (!rt) return report_error(rt.status());
  std::vector<float> audio;
  std::string text;
  nlohmann::json events = nlohmann::json::array();
  const Status st = (*rt)->run(*inputs, [&](const pipeline::StageEvent& e) {
    audio.insert(audio.end(), e.value.samples.begin(), e.value.samples.end());
    if (e.port == "text") text += e.value.text;
    if (!a.archive.empty()) events.push_back(event_json(e));
    if (a.events) {
      std::printf("%s\n", event_json(e).dump().c_str());
    } else if (!e.value.text.empty()) {
      std::fputs(e.value.text.c_str(), stdout);
    }
    std::fflush(stdout);
  });
  const nlohmann::json state = (*rt)->state_json();
  if (a.events)
    std::printf("%s\n", nlohmann::json{{"state", state}}.dump().c_str());
  else
    std::printf("\n");
  if (!a.archive.empty()) RETURN_CODE_IF_ERROR(write_archive(a, events, state, st, text, audio));
  if (!st.ok()) return report_error(st);
  if (!a.wav.empty()) {
    if (audio.empty())
      return report_error(Status::invalid_argument("--wav: no audio reached the graph's outputs"));
    RETURN_CODE_IF_ERROR(write_wav16(a.wav, audio, 24000));  // audio.pcm@1 is 24 kHz mono
    std::fprintf(stderr, "edge-infer: wrote %zu samples (%.2f s) to %s\n", audio.size(),
                 static_cast<double>(audio.size()) / 24000.0, a.wav.c_str());
  }
  return 0;
}

}  // namespace

void register_pipeline(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("pipeline", "Stage graphs: plan or run a pipeline file");
  sub->require_subcommand(1);
  auto a = std::make_shared<PipelinePlanArgs>();
  CLI::App* plan = sub->add_subcommand("plan",
                                       "Validate a pipeline file, verify its artifacts and reserve "
                                       "each stage's RAM; JSON per stage");
  plan->add_option("file", a->file, "pipeline file (YAML or JSON)")->required();
  plan->add_option("--ctx", a->ctx,
                   "context of each language-model stage's memory plan (default 4096)");
  plan->add_option("--memory-limit", a->memory_limit, "RAM the pipeline may use, e.g. 4GiB");
  plan->callback([a, &ctx] { ctx.exit_code = run_pipeline_plan(*a); });

  auto r = std::make_shared<PipelineRunArgs>();
  CLI::App* run = sub->add_subcommand(
      "run", "Run one request through a pipeline (lm stages in process for now)");
  run->add_option("file", r->file, "pipeline file (YAML or JSON)")->required();
  run->add_option("--input", r->inputs, "graph input: NAME=TEXT, NAME=ids:1,2,3, NAME=image:PNG_OR_JPEG or NAME=wav:WAV (repeatable)")
      ->required();
  run->add_option("-n,--max-tokens", r->max_tokens, "tokens per language-model stage (default 64)");
  run->add_option("--ctx", r->ctx, "context of each language-model stage (default 4096)");
  run->add_option("-t,--threads", r->threads, "threads (default: all allowed cores)");
  run->add_option("--memory-limit", r->memory_limit, "RAM the pipeline may use, e.g. 4GiB");
  run->add_option("--wav", r->wav, "write the audio reaching the graph's outputs to this WAV file");
  run->add_option("--archive", r->archive,
                  "write the run's evidence (pipeline file, events, per-stage placement, versions, "
                  "hashes, bytes, generations; provenance) and its outputs into this folder");
  run->add_flag("--events", r->events,
                "print every output event as a JSON line, then the runtime state");
  run->callback([r, &ctx] { ctx.exit_code = run_pipeline_run(*r); });
}

}  // namespace edge::cli
