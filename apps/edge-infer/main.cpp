// edge-infer: one binary, subcommands (see cli_*.cpp).
#include <cstdio>

int main(int argc, char** argv) {
  std::fprintf(stderr, "edge-infer: no subcommands yet\n");
  return 2;
}
