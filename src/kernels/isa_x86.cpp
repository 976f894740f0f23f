// x86 ISA levels and the kernel variants built for them (kernels/isa.h). Compiled only on
// x86 (CMakeLists.txt), like the x86_avx2/ and x86_avx512/ folders it names.
#include "kernels/dense_isa.h"
#include "kernels/isa.h"

namespace edge {

const std::vector<IsaLevel>& isa_levels() {
  static const std::vector<IsaLevel> levels = [] {
    const std::vector<std::string> avx2 = {"avx2", "fma", "f16c"};
    std::vector<std::string> avxvnni = avx2, avx512 = avx2;
    avxvnni.push_back("avxvnni");
    for (const char* f : {"avx512f", "avx512bw", "avx512vl", "avx512dq"}) avx512.push_back(f);
    std::vector<std::string> avx512vnni = avx512;
    avx512vnni.push_back("avx512vnni");
    // AMX-INT8 tiles beside the AVX-512 VNNI table they extend (x86_avx512/packed_amx.cpp).
    std::vector<std::string> amx = avx512vnni;
    for (const char* f : {"amx-tile", "amx-int8"}) amx.push_back(f);
    auto m = [](std::vector<std::string> f) {
      for (std::string& s : f) s = "-m" + s;
      return f;
    };
    return std::vector<IsaLevel>{{Isa::kAvx2, "avx2", avx2, m(avx2)},
                                 {Isa::kAvxVnni, "avxvnni", avxvnni, m(avxvnni)},
                                 {Isa::kAvx512, "avx512", avx512, m(avx512)},
                                 {Isa::kAvx512Vnni, "avx512vnni", avx512vnni, m(avx512vnni)},
                                 {Isa::kAmx, "amx", amx, m(amx)}};
  }();
  return levels;
}

const std::vector<KernelVariant>& kernel_variants() {
  static const std::vector<KernelVariant> v = {
      {"dense", "avx2", Isa::kAvx2, install_dense_avx2},
      {"dense", "avx512", Isa::kAvx512, install_dense_avx512},
      {"packed", "avx2", Isa::kAvx2, nullptr, install_packed_avx2},
      {"packed", "avx2_vnni", Isa::kAvxVnni, nullptr, install_packed_avxvnni},
      {"packed", "avx512_vnni", Isa::kAvx512Vnni, nullptr, install_packed_avx512vnni},
      {"packed", "avx512_amx", Isa::kAmx, nullptr, install_packed_amx},
      {"stream_read", "avx2", Isa::kAvx2, nullptr, nullptr, stream_read_avx2},
      {"stream_read", "avx512", Isa::kAvx512, nullptr, nullptr, stream_read_avx512},
  };
  return v;
}

}  // namespace edge
