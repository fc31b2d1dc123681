#include "core/cpu_features.h"

#include <atomic>
#include <cpuid.h>
#include <cstdlib>
#include <cstring>

#include "core/knobs.h"
#include "core/log.h"

namespace recur {

// The dispatch level is a knob like any other, so an experiment can lower it with --set.
RECUR_KNOB(core_isa, {.name = "core.isa", .type = KnobType::kEnum, .choices = {"auto", "scalar", "avx2", "avx512"},
                      .default_value = "auto", .components = {"core:dispatch"},
                      .acts = KnobActs::kProcess,
                      .help = "highest instruction set kernels may use (auto: the best the CPU has); applied once "
                              "at start-up (recur main), so every arm of one gate runs the same level"});

namespace {

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(uint32_t v, int b) { return (v >> b) & 1u; }

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  Regs r0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &r0.ebx, 4);
  std::memcpy(vendor + 4, &r0.edx, 4);
  std::memcpy(vendor + 8, &r0.ecx, 4);
  f.vendor = vendor;
  uint32_t max_leaf = r0.eax;

  Regs r1 = cpuid(1);
  f.sse42 = bit(r1.ecx, 20);
  f.fma = bit(r1.ecx, 12);
  f.f16c = bit(r1.ecx, 29);
  bool osxsave = bit(r1.ecx, 27);
  if (osxsave) {
    uint64_t xcr0 = xgetbv0();
    f.os_saves_ymm = (xcr0 & 0x6) == 0x6;
    f.os_saves_zmm = (xcr0 & 0xE6) == 0xE6;
    f.os_saves_tiles = ((xcr0 >> 17) & 3) == 3;
  }
  if (max_leaf >= 7) {
    Regs r7 = cpuid(7, 0);
    f.avx2 = bit(r7.ebx, 5);
    f.avx512f = bit(r7.ebx, 16);
    f.avx512dq = bit(r7.ebx, 17);
    f.avx512bw = bit(r7.ebx, 30);
    f.avx512vl = bit(r7.ebx, 31);
    f.avx512vnni = bit(r7.ecx, 11);
    f.amx_bf16 = bit(r7.edx, 22);
    f.amx_tile = bit(r7.edx, 24);
    f.amx_int8 = bit(r7.edx, 25);
    Regs r71 = cpuid(7, 1);
    f.avx512bf16 = bit(r71.eax, 5);
    f.avx_vnni = bit(r71.eax, 4);
  }
  Regs rx = cpuid(0x80000000);
  if (rx.eax >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      Regs b = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i + 0, &b.eax, 4);
      std::memcpy(brand + 16 * i + 4, &b.ebx, 4);
      std::memcpy(brand + 16 * i + 8, &b.ecx, 4);
      std::memcpy(brand + 16 * i + 12, &b.edx, 4);
    }
    f.brand = brand;
    while (!f.brand.empty() && f.brand.back() == ' ') f.brand.pop_back();
  }
  if (rx.eax >= 0x80000007) f.invariant_tsc = bit(cpuid(0x80000007).edx, 8);
  return f;
}

Isa compute_detected(const CpuFeatures& f) {
  if (f.os_saves_zmm && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx2 && f.fma)
    return Isa::kAvx512;
  if (f.os_saves_ymm && f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

Isa initial_cap() {
  Isa detected = detected_isa();
  const char* env = std::getenv("RECUR_ISA");
  if (env == nullptr || *env == '\0') return detected;
  auto isa = parse_isa(env);
  if (!isa) {
    LOG_WARN("RECUR_ISA='{}' is not one of scalar, avx2, avx512; using {}", env, isa_name(detected));
    return detected;
  }
  if (*isa > detected) {
    LOG_WARN("RECUR_ISA={} but this CPU runs at most {}; using {}", env, isa_name(detected),
             isa_name(detected));
    return detected;
  }
  return *isa;
}

std::atomic<Isa>& cap_storage() {
  static std::atomic<Isa> cap{initial_cap()};
  return cap;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (isa_name(isa) == name) return isa;
  return std::nullopt;
}

Isa detected_isa() {
  static const Isa isa = compute_detected(cpu_features());
  return isa;
}

Isa active_isa() { return cap_storage().load(std::memory_order_relaxed); }

Status set_isa_cap(Isa cap) {
  if (cap > detected_isa())
    return unsupported("ISA level {} requested, but this CPU runs at most {}", isa_name(cap),
                       isa_name(detected_isa()));
  cap_storage().store(cap, std::memory_order_relaxed);
  return ok_status();
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (isa <= detected_isa()) out.push_back(isa);
  return out;
}

ScopedIsaCap::ScopedIsaCap(Isa cap) : previous_(active_isa()) {
  if (cap > detected_isa()) cap = detected_isa();
  cap_storage().store(cap, std::memory_order_relaxed);
}
ScopedIsaCap::~ScopedIsaCap() { cap_storage().store(previous_, std::memory_order_relaxed); }

std::string cpu_feature_string(const CpuFeatures& f) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.sse42, "sse4.2");
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vnni, "avx512vnni");
  add(f.amx_tile, "amx-tile");
  add(f.amx_int8, "amx-int8");
  add(f.amx_bf16, "amx-bf16");
  add(f.avx512bf16, "avx512bf16");
  add(f.avx_vnni, "avxvnni");
  add(f.invariant_tsc, "invariant_tsc");
  return s;
}

}  // namespace recur
