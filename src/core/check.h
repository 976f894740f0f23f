// CHECK: aborts on a broken internal invariant (a programming error). Never use it for
// input that comes from outside; return a Status instead.
#pragma once

namespace edge {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* msg);
}

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) ::edge::check_failed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define CHECK_MSG(cond, msg)                                            \
  do {                                                                  \
    if (!(cond)) ::edge::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
