// A tiny kernel runner for tests/candidate_cli_test.sh: the kernel-runner protocol
// (src/agent/candidate/candidate_protocol.h) for kernel `rmsnorm`, with the variants of variants.h.
// Deliberately independent of recur: a candidate's tree only has to speak the protocol.
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "variants.h"

int main() {
  char* base = nullptr;
  size_t size = 0;
  char line[1024];
  while (std::fgets(line, sizeof line, stdin)) {
    if (std::strncmp(line, "quit", 4) == 0) break;
    if (std::strncmp(line, "variants", 8) == 0) {
      std::printf("ok");
      for (const Variant& v : kVariants) std::printf(" rmsnorm/%s", v.name);
      std::printf("\n");
    } else if (std::strncmp(line, "run ", 4) == 0) {
      char kernel[64] = "", variant[64] = "";
      long m = 0, n = 0, iters = 0;
      int used = 0;
      std::sscanf(line, "run %63s %63s M%ld,N%ld %ld%n", kernel, variant, &m, &n, &iters, &used);
      // One tensor set (x, w, y) for every call, or one set per call.
      unsigned long off[3 * 16] = {};
      int count = 0;
      for (char *p = line + used, *end = nullptr; count < 3 * 16; p = end) {
        off[count] = std::strtoul(p, &end, 10);
        if (end == p) break;
        ++count;
      }
      const long sets = count == 3 ? 1 : count / 3;
      struct stat st {};
      fstat(3, &st);
      if (size_t(st.st_size) != size) {
        if (base) munmap(base, size);
        size = size_t(st.st_size);
        base = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0));
      }
      const Variant* found = nullptr;
      for (const Variant& v : kVariants)
        if (std::strcmp(variant, v.name) == 0) found = &v;
      if (!found || std::strcmp(kernel, "rmsnorm") != 0 || m <= 0 || n <= 0 || (sets != 1 && sets != iters) ||
          count % 3 != 0) {
        std::printf("error no variant %s/%s for M%ld,N%ld with %d offsets\n", kernel, variant, m, n, count);
      } else {
        for (long i = 0; i < iters; ++i) {
          const unsigned long* o = off + 3 * (i % sets);
          found->fn(reinterpret_cast<const float*>(base + o[0]), reinterpret_cast<const float*>(base + o[1]),
                    reinterpret_cast<float*>(base + o[2]), m, n);
        }
        std::printf("ok\n");
      }
    } else {
      std::printf("error unknown request\n");
    }
    std::fflush(stdout);
  }
  return 0;
}
