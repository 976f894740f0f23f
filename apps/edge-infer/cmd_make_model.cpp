// edge-infer make-model --arch llama|qwen2|qwen3|gemma3|spark|qwen3moe|gpt-oss|outetts|qwen3-tts|
//   qwen3-tts-tokenizer|wavtokenizer-dec|bert|nomic-bert [--layers N --dim D ...]
//   --type f32|f16|bf16 -o FILE.gguf|DIR
// Deterministic random weights: the same flags give the same bytes.
#include <cstdio>

#include "commands.h"
#include "convert/random_bert.h"
#include "convert/random_model.h"
#include "convert/random_qwen3_tts.h"
#include "convert/random_qwen3_tts_codec.h"
#include "media_input.h"
#include "model/arch/clip_vision.h"
#include "model/registry.h"

namespace edge::cli {
namespace {

struct MakeModelArgs {
  RandomModelOptions o;
  std::string type = "f32";
  std::string experts_type;  // empty: as --type
  std::string out;
  bool tied = false, untied = false;
  int proj_dim = 0;                     // projectors: the LM's embedding width (0: --dim)
  int image_size = 64, patch_size = 4;  // vision projectors
  bool no_class_embd = false;           // clip-mlp: a SigLIP tower (no CLS, no pre-LN)
  bool rerank = false;                  // bert: a cross-encoder (classification head)
  RandomQwen3TtsOptions tts;            // qwen3-tts: the code predictor and text sizes
  std::string codec_size = "small";     // qwen3-tts-tokenizer: small | published
  CLI::App* sub = nullptr;              // which flags were given
};

// Qwen3-TTS: a checkpoint directory in Qwen's layout (the talker from --layers --dim ...).
int make_qwen3_tts(MakeModelArgs& a) {
  RandomQwen3TtsOptions& t = a.tts;
  t.n_layer = a.o.n_layer;
  t.n_embd = a.o.n_embd;
  t.n_head = a.o.n_head;
  t.n_head_kv = a.o.n_head_kv;
  t.head_dim = a.o.head_dim > 0 ? a.o.head_dim : a.o.n_embd / a.o.n_head;
  t.n_ff = a.o.n_ff > 0 ? a.o.n_ff : 2 * a.o.n_embd;
  t.dtype = a.o.dtype;
  t.seed = a.o.seed;
  Status s = write_random_qwen3_tts(t, a.out);
  if (!s.ok()) return report_error(s);
  // Its speech_tokenizer/ as Qwen ships it: the 12 Hz codec (--codec-size) with the
  // talker's codebook, so `tts -m DIR` finds its decoder there.
  RandomQwen3TtsCodecOptions c;
  c.hp = a.codec_size == "published" ? Qwen3TtsCodecHparams() : small_qwen3_tts_codec_hparams();
  if (a.codec_size != "small" && a.codec_size != "published")
    return report_error(Status::invalid_argument("--codec-size must be small or published"));
  c.hp.codebook_size = t.codebook;
  c.hp.n_quantizers = t.n_code_groups;
  c.seed = t.seed;
  s = write_random_qwen3_tts_codec(c, a.out + "/speech_tokenizer");
  if (!s.ok()) return report_error(s);
  std::fprintf(stderr,
               "edge-infer: wrote qwen3-tts checkpoint (random weights) to %s, its codec to "
               "%s/speech_tokenizer\n",
               a.out.c_str(), a.out.c_str());
  return 0;
}

// bert | nomic-bert: a text encoder (embeddings; --rerank: a cross-encoder).
int make_bert(const MakeModelArgs& a) {
  RandomBertOptions b;
  b.arch = a.o.arch;
  b.n_layer = a.o.n_layer;
  b.n_embd = a.o.n_embd;
  b.n_head = a.o.n_head;
  b.n_ff = a.o.n_ff;
  b.n_vocab = a.o.n_vocab;
  b.ctx = a.o.ctx;
  b.pooling_type = a.o.pooling_type;
  b.rerank = a.rerank;
  b.dtype = a.o.dtype;
  b.seed = a.o.seed;
  Status s = write_random_bert(b, a.out);
  if (!s.ok()) return report_error(s);
  std::fprintf(stderr, "edge-infer: wrote %s %s (random weights) to %s\n", b.arch.c_str(),
               b.rerank ? "cross-encoder" : "encoder", a.out.c_str());
  return 0;
}

int run_make_model(MakeModelArgs& a) {
  // clip-<vision projector type> (the projector table); --type may be q8_0 here.
  if (a.o.arch.starts_with("clip-") && find_vision_projector(a.o.arch.substr(5)))
    return make_vision_projector(a.o, a.proj_dim, a.image_size, a.patch_size, !a.no_class_embd,
                                 a.type, a.out);
  auto dt = dtype_from_name(a.type);
  if (!dt) return report_error(dt.status());
  const bool audio = a.o.arch == "clip-ultravox" || a.o.arch == "clip-qwen2a";  // q8_0 too
  const bool encoder = a.o.arch == "bert" || a.o.arch == "nomic-bert";          // q8_0 too
  if (*dt != DType::F32 && *dt != DType::F16 && *dt != DType::BF16 &&
      !((audio || encoder) && *dt == DType::Q8_0))
    return report_error(
        Status::invalid_argument("--type must be f32, f16 or bf16 (got " + a.type + ")"));
  a.o.dtype = *dt;
  if (!a.experts_type.empty()) {
    auto et = dtype_from_name(a.experts_type);
    if (!et) return report_error(et.status());
    a.o.experts_dtype = *et;
  }
  if (encoder) return make_bert(a);
  if (a.rerank) return report_error(Status::invalid_argument("--rerank is for --arch bert"));
  if (a.o.arch == "wavtokenizer-dec") return make_vocoder(a.o, a.out);
  if (a.o.arch == "qwen3-tts") return make_qwen3_tts(a);
  if (a.o.arch == "qwen3-tts-tokenizer")
    return make_qwen3_tts_codec(
        a.o, a.codec_size, [&a](const char* f) { return a.sub->get_option(f)->count() > 0; },
        a.out);
  if (audio) return make_audio_projector(a.o, a.proj_dim, a.out);
  if (a.o.arch == "outetts") {  // OuteTTS 0.2/0.3: a Qwen2 LM whose vocabulary holds audio codes
    a.o.arch = "qwen2";
    if (a.o.outetts.empty()) a.o.outetts = "0.2";
  }
  if (a.tied && a.untied)
    return report_error(Status::invalid_argument("--tied and --untied together"));
  if (a.tied) a.o.tied = true;
  if (a.untied) a.o.tied = false;
  Status s = write_random_model(a.o, a.out);
  if (!s.ok()) return report_error(s);
  std::fprintf(stderr, "edge-infer: wrote %s model (random weights) to %s\n", a.o.arch.c_str(),
               a.out.c_str());
  return 0;
}

}  // namespace

void register_make_model(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<MakeModelArgs>();
  CLI::App* sub =
      app.add_subcommand("make-model", "Write a model with deterministic random weights");
  // The language models from the family table, then the other generators.
  std::string archs = writable_architectures();
  for (size_t at = archs.find(", "); at != std::string::npos; at = archs.find(", ", at))
    archs.replace(at, 2, " | ");
  sub->add_option(
         "--arch", a->o.arch,
         archs +
             " | outetts | qwen3-tts | qwen3-tts-tokenizer | wavtokenizer-dec | clip-ultravox | "
             "clip-qwen2a | "
             "clip-gemma3 | clip-mlp | bert | nomic-bert")
      ->capture_default_str();
  sub->add_option("--proj-dim", a->proj_dim,
                  "projectors (clip-*): output width = the LM's n_embd (0: --dim)");
  sub->add_option("--image-size", a->image_size,
                  "vision projectors (clip-gemma3 | clip-mlp): input side")
      ->capture_default_str();
  sub->add_option("--patch-size", a->patch_size, "vision projectors: patch side")
      ->capture_default_str();
  sub->add_flag("--no-class-embd", a->no_class_embd,
                "clip-mlp: no CLIP class token and pre-LN (a SigLIP tower)");
  sub->add_option("--layers", a->o.n_layer)->capture_default_str();
  sub->add_option("--dim", a->o.n_embd, "hidden size")->capture_default_str();
  sub->add_option("--heads", a->o.n_head)->capture_default_str();
  sub->add_option("--kv-heads", a->o.n_head_kv)->capture_default_str();
  sub->add_option("--head-dim", a->o.head_dim, "0: dim / heads")->capture_default_str();
  sub->add_option("--ffn", a->o.n_ff, "feed-forward size (0: 2 * dim)")->capture_default_str();
  sub->add_option("--vocab", a->o.n_vocab)->capture_default_str();
  sub->add_option("--experts", a->o.n_expert,
                  "MoE families: experts per layer (0: the family's default)");
  sub->add_option("--experts-used", a->o.n_expert_used,
                  "MoE families: experts per token (0: the family's default)");
  sub->add_option("--expert-ffn", a->o.n_ff_expert,
                  "MoE families: one expert's FFN width (0: ffn / 2)");
  sub->add_option("--ctx", a->o.ctx, "advertised context length")->capture_default_str();
  sub->add_option("--sliding-window", a->o.sliding_window,
                  "gemma3/spark: window of sliding layers");
  sub->add_option("--sliding-pattern", a->o.sliding_pattern,
                  "gemma3/spark: one global layer every N");
  sub->add_flag("--tied", a->tied, "output head shares the embedding");
  sub->add_flag("--untied", a->untied, "separate output head");
  sub->add_option("--type", a->type, "f32 | f16 | bf16")->capture_default_str();
  sub->add_option(
         "--pooling", a->o.pooling_type,
         "GGUF pooling_type of an embedding model: 1 mean, 2 cls, 3 last (Qwen3-Embedding), "
         "4 rank (bert --rerank)")
      ->check(CLI::Range(1, 4));
  sub->add_flag("--rerank", a->rerank,
                "bert: a cross-encoder (BGE-reranker style classification head; pooling 4)");
  sub->add_option(
      "--experts-type", a->experts_type,
      "MoE families: the stacked experts' type, f32 | f16 | bf16 | mxfp4 (default: --type)");
  sub->add_option("--seed", a->o.seed)->capture_default_str();
  sub->add_option("--quiet-from", a->o.quiet_from,
                  "layers from this one on add --quiet-scale times their attention and FFN "
                  "outputs: a model that a draft of its first layers (--layers N, same seed) "
                  "agrees with at a chosen rate");
  sub->add_option("--quiet-scale", a->o.quiet_scale, "see --quiet-from")->capture_default_str();
  sub->add_option(
      "--outetts-version", a->o.outetts,
      "0.2 | 0.3: an OuteTTS speech-code LM (qwen2 with the OuteTTS tokens; --arch outetts "
      "defaults to 0.2)");
  sub->add_option("--cp-layers", a->tts.cp_n_layer, "qwen3-tts: code predictor layers")
      ->capture_default_str();
  sub->add_option("--cp-dim", a->tts.cp_n_embd, "qwen3-tts: code predictor width (0: --dim)")
      ->capture_default_str();
  sub->add_option("--cp-ffn", a->tts.cp_n_ff, "qwen3-tts: code predictor feed-forward (0: --ffn)")
      ->capture_default_str();
  sub->add_option("--codebook", a->tts.codebook, "qwen3-tts: codebook size (Qwen: 2048)")
      ->capture_default_str();
  sub->add_option("--code-groups", a->tts.n_code_groups, "qwen3-tts: codebooks per frame")
      ->capture_default_str();
  sub->add_option("--text-dim", a->tts.text_hidden, "qwen3-tts: text embedding width (Qwen: 2048)")
      ->capture_default_str();
  sub->add_option("--tts-type", a->tts.model_type, "qwen3-tts: custom_voice | base")
      ->capture_default_str();
  sub->add_option("--codec-size", a->codec_size,
                  "qwen3-tts-tokenizer: small | published (Qwen's sizes); other flags override")
      ->capture_default_str();
  sub->add_option("-o,--output", a->out, "FILE.gguf, or a directory for Hugging Face format")
      ->required();
  a->sub = sub;
  sub->callback([a, &ctx] { ctx.exit_code = run_make_model(*a); });
}

}  // namespace edge::cli
