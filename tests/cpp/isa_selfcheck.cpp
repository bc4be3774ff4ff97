// Self-check of every CPU kernel this build can run, without GoogleTest, so that it can
// be cross-compiled for aarch64 (Grace) and run under qemu on an x86 CI machine
// (tests/python/test_cross_isa.py). Exit code 0: every kernel computed the right data.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cpu/kernels.hpp"

int main() {
  int bad = 0;
  for (size_t bytes : {size_t{64}, size_t{4096} + 320, size_t{1} << 20}) {
    auto* a = static_cast<unsigned char*>(std::aligned_alloc(4096, bytes));
    auto* b = static_cast<unsigned char*>(std::aligned_alloc(4096, bytes));
    for (const auto& isa : mempath::cpu::available_isas()) {
      std::memset(a, 0x01, bytes);
      const bool read_ok = isa.read(a, bytes) == (bytes / 8) * 0x0101010101010101ULL;
      isa.write(b, bytes, 0x1234);
      bool write_ok = true;
      for (size_t i = 0; i < bytes / 8; ++i) write_ok &= reinterpret_cast<uint64_t*>(b)[i] == 0x1234;
      std::memset(b, 0, bytes);
      isa.copy(b, a, bytes);
      const bool copy_ok = std::memcmp(a, b, bytes) == 0;
      std::printf("%s %zu read=%d write=%d copy=%d\n", isa.name.c_str(), bytes, read_ok, write_ok, copy_ok);
      bad += !read_ok + !write_ok + !copy_ok;
    }
    std::free(a);
    std::free(b);
  }
  return bad == 0 ? 0 : 1;
}
