/* Writes K-quant reference blocks made by llama.cpp's own quantiser (ggml_quantize_chunk, the
 * code llama-quantize runs) and their values as llama.cpp's dequantiser gives them (the
 * type's to_float), for tests/quant/kquant_reference_test.cpp. Our code; it only calls
 * ggml's public API. Build and run (outside this repository's build):
 *
 *   cc -O2 -I LLAMA/ggml/include tests/data/kquant/make_reference.c \
 *      LLAMA/build/ggml/src/libggml-base.a -lstdc++ -lm -lpthread -o /tmp/make_kquant_reference
 *   /tmp/make_kquant_reference tests/data/kquant
 *
 * For each type T: T.blocks (ROWS rows of COLS values, ggml's block layout), T.values (the
 * dequantised floats, ROWS * COLS little-endian f32). input.f32 holds the source values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"

enum { ROWS = 8, COLS = 512 };

/* Deterministic source values: a normal-ish mix with per-row spread and a few outliers,
 * so the sub-block scales and mins differ. */
static float source_value(uint32_t* state, int row) {
  float s = 0.0f;
  for (int i = 0; i < 4; ++i) {
    *state = *state * 1664525u + 1013904223u;
    s += (float)(*state >> 8) / 16777216.0f - 0.5f;
  }
  float v = s * (0.02f + 0.01f * (float)row);
  *state = *state * 1664525u + 1013904223u;
  if ((*state >> 24) == 7) v *= 12.0f;
  if (row % 3 == 1) v += 0.01f; /* rows with an offset: mins matter */
  return v;
}

static int write_file(const char* dir, const char* name, const void* data, size_t bytes) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  fclose(f);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  /* ggml_init fills the fp16 conversion table the quantisers and dequantisers read. */
  /* A small arena: ggml_free of a zero-sized one is not safe. */
  struct ggml_init_params params = {1024, NULL, true};
  struct ggml_context* ctx = ggml_init(params);
  static float src[ROWS * COLS], back[ROWS * COLS];
  uint32_t state = 12345u;
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) src[r * COLS + c] = source_value(&state, r);
  if (write_file(argv[1], "input.f32", src, sizeof src)) return 1;
  const struct { enum ggml_type type; const char* name; } types[] = {
      {GGML_TYPE_Q2_K, "q2_k"}, {GGML_TYPE_Q3_K, "q3_k"}, {GGML_TYPE_Q4_K, "q4_k"},
      {GGML_TYPE_Q5_K, "q5_k"}, {GGML_TYPE_Q6_K, "q6_k"},
  };
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    const size_t bytes = ggml_row_size(types[t].type, COLS) * ROWS;
    void* blocks = malloc(bytes);
    ggml_quantize_chunk(types[t].type, src, blocks, 0, ROWS, COLS, NULL);
    ggml_get_type_traits(types[t].type)->to_float(blocks, back, ROWS * COLS);
    char name[64];
    snprintf(name, sizeof name, "%s.blocks", types[t].name);
    if (write_file(argv[1], name, blocks, bytes)) return 1;
    snprintf(name, sizeof name, "%s.values", types[t].name);
    if (write_file(argv[1], name, back, sizeof back)) return 1;
    free(blocks);
  }
  ggml_free(ctx);
  return 0;
}
