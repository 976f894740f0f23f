/* Symbols of ggml.c that ggml-quants.c references from code make_ref never runs. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
void ggml_abort(const char* file, int line, const char* fmt, ...) {
  fprintf(stderr, "abort %s:%d\n", file, line);
  abort();
}
size_t ggml_row_size(int type, long long ne) {
  (void)type;
  (void)ne;
  abort();
}
const char* ggml_type_name(int type) {
  (void)type;
  abort();
}
size_t ggml_type_size(int type) {
  (void)type;
  abort();
}
