// Tests for core/convert against references that share no code with it:
//   decode   every code of each format against a decoder built from sign, exponent and mantissa
//            with std::ldexp in double;
//   encode   a nearest-value search over the sorted table of all finite decoded values (ties to
//            the even code), on every value, every midpoint, the floats either side of each
//            midpoint and millions of random inputs; plus hand-computed edge cases;
//   tf32 and int8 against double arithmetic;
//   arrays   every ISA path in runnable_isas() bit-identical to the single-value functions,
//            including tails, the bytes just past the end, and a hostile MXCSR.
#include "core/convert.h"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/convert_kernels.h"
#include "core/cpu_features.h"

namespace recur {
namespace {

namespace ck = convert_kernels;

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The bits of a value, for messages.
template <typename T>
uint64_t raw(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}

// Collects mismatches and prints the first few, so a broken rounding rule reports a handful of
// readable lines instead of a million.
struct Mismatches {
  size_t count = 0;
  std::string shown;
  template <typename... Args>
  void add(fmt::format_string<Args...> f, Args&&... args) {
    if (count++ < 10) shown += fmt::format(f, std::forward<Args>(args)...) + "\n";
  }
};

// ---- the reference model of a format ----

struct Format {
  const char* name;
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;  // all-ones exponent holds inf and NaN; otherwise only S.1..1.1..1 is NaN
};

constexpr Format kBf16{"bf16", 8, 7, 127, true};
constexpr Format kFp16{"fp16", 5, 10, 15, true};
constexpr Format kE4m3{"fp8e4m3", 4, 3, 7, false};
constexpr Format kE5m2{"fp8e5m2", 5, 2, 15, true};

uint32_t code_count(const Format& f) { return 1u << (1 + f.exp_bits + f.man_bits); }
uint32_t sign_bit(const Format& f) { return 1u << (f.exp_bits + f.man_bits); }

double ref_decode(const Format& f, uint32_t code) {
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  const double sign = (code & sign_bit(f)) ? -1.0 : 1.0;
  const uint32_t e = (code >> f.man_bits) & exp_max;
  const uint32_t m = code & man_mask;
  if (f.ieee_specials && e == exp_max) return m == 0 ? sign * kInf : std::copysign(kNaN, sign);
  if (!f.ieee_specials && e == exp_max && m == man_mask) return std::copysign(kNaN, sign);
  if (e == 0) return sign * std::ldexp(double(m), 1 - f.bias - f.man_bits);
  return sign * std::ldexp(double((1u << f.man_bits) + m), int(e) - f.bias - f.man_bits);
}

// The non-negative finite values of a format in increasing order, with their codes. For formats
// that overflow to infinity the table ends with inf's code at 2^(emax + 1), the value the next
// binade would start at, so the nearest-value search rounds into it exactly as IEEE does.
struct EncodeTable {
  std::vector<double> values;
  std::vector<uint32_t> codes;
  uint32_t sign = 0;
  uint32_t inf_code = 0;  // 0 when the format saturates instead
};

EncodeTable make_table(const Format& f, bool to_infinity) {
  EncodeTable t;
  t.sign = sign_bit(f);
  for (uint32_t c = 0; c < sign_bit(f); ++c) {
    double v = ref_decode(f, c);
    if (!std::isfinite(v)) continue;
    t.values.push_back(v);
    t.codes.push_back(c);
  }
  if (to_infinity) {
    t.inf_code = ((1u << f.exp_bits) - 1) << f.man_bits;
    t.values.push_back(std::ldexp(1.0, (1 << f.exp_bits) - 1 - f.bias));
    t.codes.push_back(t.inf_code);
  }
  return t;
}

// The code nearest to x (ties to the even code), or nullopt for NaN.
std::optional<uint32_t> ref_encode(const EncodeTable& t, float x) {
  if (std::isnan(x)) return std::nullopt;
  const uint32_t sign = std::signbit(x) ? t.sign : 0;
  const double a = std::fabs(double(x));
  if (a >= t.values.back()) return sign | t.codes.back();  // inf, or saturation at max
  size_t hi = size_t(std::upper_bound(t.values.begin(), t.values.end(), a) - t.values.begin());
  size_t lo = hi - 1;
  double below = a - t.values[lo], above = t.values[hi] - a;
  size_t pick = below < above ? lo : above < below ? hi : (t.codes[lo] % 2 == 0 ? lo : hi);
  return sign | t.codes[pick];
}

// ---- the functions under test, by format ----

struct Codec {
  Format format;
  bool to_infinity;
  std::function<uint32_t(float)> encode;
  std::function<float(uint32_t)> decode;
};

std::vector<Codec> codecs() {
  return {
      {kBf16, true, [](float x) { return uint32_t(fp32_to_bf16(x)); },
       [](uint32_t c) { return bf16_to_fp32(uint16_t(c)); }},
      {kFp16, true, [](float x) { return uint32_t(fp32_to_fp16(x)); },
       [](uint32_t c) { return fp16_to_fp32(uint16_t(c)); }},
      {kE4m3, false, [](float x) { return uint32_t(fp32_to_fp8e4m3(x)); },
       [](uint32_t c) { return fp8e4m3_to_fp32(uint8_t(c)); }},
      {kE5m2, true, [](float x) { return uint32_t(fp32_to_fp8e5m2(x, Fp8Overflow::kInfinity)); },
       [](uint32_t c) { return fp8e5m2_to_fp32(uint8_t(c)); }},
      {kE5m2, false,
       [](float x) { return uint32_t(fp32_to_fp8e5m2(x, Fp8Overflow::kSaturate)); },
       [](uint32_t c) { return fp8e5m2_to_fp32(uint8_t(c)); }},
  };
}

std::string codec_name(const Codec& c) {
  return fmt::format("{}{}", c.format.name, c.to_infinity ? "" : " (saturating)");
}

// ---- decode ----

TEST(ConvertDecode, EveryCodeMatchesTheLdexpReference) {
  for (const Codec& c : codecs()) {
    Mismatches bad;
    for (uint32_t code = 0; code < code_count(c.format); ++code) {
      double want = ref_decode(c.format, code);
      float got = c.decode(code);
      if (std::isnan(want)) {
        // NaN keeps its sign and comes back quiet.
        if (!std::isnan(got) || std::signbit(got) != std::signbit(want) ||
            (bits(got) & 0x00400000u) == 0)
          bad.add("code {:#x}: got {:#010x}, want a quiet NaN of that sign", code, bits(got));
        continue;
      }
      ASSERT_EQ(double(float(want)), want) << "reference value not an fp32";
      if (bits(got) != bits(float(want)))
        bad.add("code {:#x}: got {:#010x} ({}), want {:#010x} ({})", code, bits(got), got,
                bits(float(want)), want);
    }
    EXPECT_EQ(bad.count, 0u) << codec_name(c) << ":\n" << bad.shown;
  }
}

TEST(ConvertDecode, HandPickedCodes) {
  EXPECT_EQ(bits(bf16_to_fp32(0x3f80)), 0x3f800000u);
  EXPECT_EQ(bits(bf16_to_fp32(0x0001)), 0x00010000u);  // subnormal kept
  EXPECT_EQ(bits(bf16_to_fp32(0x8000)), 0x80000000u);
  EXPECT_EQ(bits(bf16_to_fp32(0xff80)), 0xff800000u);
  EXPECT_EQ(bits(bf16_to_fp32(0x7f81)), 0x7fc10000u);  // signalling NaN comes back quiet
  EXPECT_EQ(bits(bf16_to_fp32(0xffc0)), 0xffc00000u);
  EXPECT_EQ(bits(fp16_to_fp32(0x0001)), bits(0x1p-24f));
  EXPECT_EQ(bits(fp16_to_fp32(0x03ff)), bits(1023 * 0x1p-24f));
  EXPECT_EQ(bits(fp16_to_fp32(0x7bff)), bits(65504.0f));
  EXPECT_EQ(bits(fp16_to_fp32(0x7c01)), 0x7fc02000u);
  EXPECT_EQ(bits(fp16_to_fp32(0xfe00)), 0xffc00000u);
  EXPECT_EQ(fp8e4m3_to_fp32(0x7e), 448.0f);
  EXPECT_EQ(fp8e4m3_to_fp32(0xfe), -448.0f);
  EXPECT_EQ(fp8e4m3_to_fp32(0x78), 256.0f);  // exponent 15 is an ordinary binade in E4M3FN
  EXPECT_EQ(fp8e4m3_to_fp32(0x01), 0x1p-9f);
  EXPECT_EQ(fp8e4m3_to_fp32(0x08), 0x1p-6f);
  EXPECT_EQ(bits(fp8e4m3_to_fp32(0x80)), 0x80000000u);
  EXPECT_EQ(bits(fp8e4m3_to_fp32(0x7f)), 0x7fc00000u);
  EXPECT_EQ(bits(fp8e4m3_to_fp32(0xff)), 0xffc00000u);
  EXPECT_EQ(fp8e5m2_to_fp32(0x7b), 57344.0f);
  EXPECT_EQ(fp8e5m2_to_fp32(0x01), 0x1p-16f);
  EXPECT_EQ(bits(fp8e5m2_to_fp32(0x7c)), 0x7f800000u);
  EXPECT_EQ(bits(fp8e5m2_to_fp32(0xfc)), 0xff800000u);
  EXPECT_EQ(bits(fp8e5m2_to_fp32(0x7d)), 0x7fe00000u);
  EXPECT_EQ(bits(fp8e5m2_to_fp32(0xfe)), 0xffc00000u);
}

// ---- encode ----

// Checks encode(x) against the table reference for each x.
void check_encode(const Codec& c, const EncodeTable& t, const std::vector<float>& inputs,
                  const char* what) {
  Mismatches bad;
  for (float x : inputs) {
    uint32_t got = c.encode(x);
    std::optional<uint32_t> want = ref_encode(t, x);
    if (!want) {
      double back = ref_decode(c.format, got);
      if (!std::isnan(back) || ((got & t.sign) != 0) != std::signbit(x))
        bad.add("x={:#010x} (NaN): got code {:#x}, want a NaN of the same sign", bits(x), got);
    } else if (got != *want) {
      bad.add("x={:#010x} ({}): got {:#x}, want {:#x}", bits(x), x, got, *want);
    }
  }
  EXPECT_EQ(bad.count, 0u) << codec_name(c) << ", " << what << " (" << inputs.size()
                           << " inputs):\n"
                           << bad.shown;
}

// Every value, every midpoint between neighbours (and past the largest finite value), and the
// floats just either side of each midpoint, in both signs.
std::vector<float> values_and_midpoints(const EncodeTable& t, const Format& f) {
  std::vector<double> values = t.values;  // for IEEE formats this ends at inf's 2^(emax + 1)
  if (t.inf_code == 0) {
    // A saturating format: also probe the midpoint to the next value it cannot represent.
    double top = values.back(), step = top - values[values.size() - 2];
    values.push_back(top + step);
  }
  std::vector<double> points;
  for (size_t i = 0; i < t.values.size(); ++i)
    points.push_back(t.codes[i] == t.inf_code && t.inf_code != 0 ? kInf : t.values[i]);
  for (size_t i = 0; i + 1 < values.size(); ++i) points.push_back((values[i] + values[i + 1]) / 2);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> out;
  for (double p : points) {
    EXPECT_LE(std::fabs(p), double(inf)) << f.name;
    float x = float(p);
    EXPECT_EQ(double(x), p) << f.name << ": midpoint not exact in fp32";
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, inf)}) {
      out.push_back(y);
      out.push_back(-y);
    }
  }
  return out;
}

std::vector<float> random_bit_patterns(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> out(n);
  for (float& x : out) x = from_bits(uint32_t(rng()));
  return out;
}

// Random floats whose exponent lands in (or just outside) the format's range.
std::vector<float> random_in_range(const Format& f, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const int lo = 1 - f.bias - f.man_bits - 3, hi = (1 << f.exp_bits) - f.bias + 1;
  std::uniform_int_distribution<int> exp(std::max(lo, -149), std::min(hi, 127));
  std::vector<float> out(n);
  for (float& x : out) {
    uint32_t r = uint32_t(rng());
    int e = exp(rng);
    uint32_t field = e >= -126 ? uint32_t(e + 127) << 23 : 0;
    uint32_t man = r & 0x7fffffu;
    if (e < -126) man = (man | 0x800000u) >> (-126 - e);  // fp32 subnormal of that scale
    x = from_bits((r & 0x80000000u) | field | man);
  }
  return out;
}

TEST(ConvertEncode, ValuesMidpointsAndTheirNeighbours) {
  for (const Codec& c : codecs()) {
    EncodeTable t = make_table(c.format, c.to_infinity);
    check_encode(c, t, values_and_midpoints(t, c.format), "values and midpoints");
  }
}

TEST(ConvertEncode, RandomInputs) {
  const std::vector<float> patterns = random_bit_patterns(2'000'000, 1);
  for (const Codec& c : codecs()) {
    EncodeTable t = make_table(c.format, c.to_infinity);
    check_encode(c, t, patterns, "random fp32 bit patterns");
    check_encode(c, t, random_in_range(c.format, 1'000'000, 2), "random in-range values");
  }
}

TEST(ConvertEncode, Bf16EdgeCases) {
  struct Case { uint32_t in; uint16_t want; };
  const Case cases[] = {
      {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x3f800000, 0x3f80},
      {0x3f808000, 0x3f80},  // tie, even stays
      {0x3f818000, 0x3f82},  // tie, odd rounds up
      {0x3f808001, 0x3f81}, {0x3f807fff, 0x3f80},
      {0x00000001, 0x0000}, {0x80000001, 0x8000},  // fp32 subnormals
      {0x00008000, 0x0000}, {0x00018000, 0x0002}, {0x00008001, 0x0001},
      {0x007fffff, 0x0080},  // largest fp32 subnormal rounds up to the smallest normal
      {0x7f7f7fff, 0x7f7f}, {0x7f7f8000, 0x7f80}, {0x7f7fffff, 0x7f80},  // overflow -> inf
      {0x7f800000, 0x7f80}, {0xff800000, 0xff80},
      {0x7fc00000, 0x7fc0}, {0xffc00000, 0xffc0},
      {0x7f800001, 0x7fc0},  // NaN whose payload is all in the dropped half: still NaN
      {0xff812345, 0xffc1},
  };
  for (const Case& c : cases)
    EXPECT_EQ(fp32_to_bf16(from_bits(c.in)), c.want) << fmt::format("{:#010x}", c.in);
}

TEST(ConvertEncode, Fp16EdgeCases) {
  struct Case { float in; uint16_t want; };
  const Case cases[] = {
      {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00},
      {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 3 * 0x1p-11f, 0x3c02},
      {65504.0f, 0x7bff}, {from_bits(0x477fefff), 0x7bff},
      {65520.0f, 0x7c00},  // midpoint to 2^16: ties to even, which is inf
      {1e6f, 0x7c00}, {-1e6f, 0xfc00},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
      {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {-0x1p-25f, 0x8000},
      {std::nextafter(0x1p-25f, 1.0f), 0x0001}, {3 * 0x1p-25f, 0x0002},
      {0x1p-14f, 0x0400}, {0x1p-14f - 0x1p-25f, 0x0400}, {1023 * 0x1p-24f, 0x03ff},
      {from_bits(0x00000001), 0x0000}, {from_bits(0x80400000), 0x8000},
  };
  for (const Case& c : cases)
    EXPECT_EQ(fp32_to_fp16(c.in), c.want) << fmt::format("{} ({:#010x})", c.in, bits(c.in));
  EXPECT_EQ(fp32_to_fp16(from_bits(0x7f800001)), 0x7e00);
  EXPECT_EQ(fp32_to_fp16(from_bits(0xff802000)), 0xfe01);
  EXPECT_EQ(fp32_to_fp16(from_bits(0x7fc00000)), 0x7e00);
  EXPECT_EQ(fp32_to_fp16(from_bits(0xffffffff)), 0xffff);
}

TEST(ConvertEncode, Fp8E4m3EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case { float in; uint8_t want; };
  const Case cases[] = {
      {0.0f, 0x00}, {-0.0f, 0x80}, {1.0f, 0x38}, {1.0625f, 0x38}, {1.1875f, 0x3a},
      {448.0f, 0x7e}, {-448.0f, 0xfe}, {416.0f, 0x7d}, {424.0f, 0x7d},
      {432.0f, 0x7e}, {std::nextafter(432.0f, 0.0f), 0x7d},  // tie below max goes to even max
      {449.0f, 0x7e}, {464.0f, 0x7e}, {1e30f, 0x7e}, {-500.0f, 0xfe},  // saturate, never NaN
      {std::numeric_limits<float>::max(), 0x7e}, {inf, 0x7e}, {-inf, 0xfe},
      {0x1p-9f, 0x01}, {0x1p-10f, 0x00}, {-0x1p-10f, 0x80},
      {std::nextafter(0x1p-10f, 1.0f), 0x01}, {3 * 0x1p-10f, 0x02}, {5 * 0x1p-10f, 0x02},
      {7 * 0x1p-10f, 0x04}, {15 * 0x1p-10f, 0x08}, {0x1p-6f, 0x08},
      {from_bits(0x00000001), 0x00}, {from_bits(0x80000001), 0x80},
  };
  for (const Case& c : cases)
    EXPECT_EQ(fp32_to_fp8e4m3(c.in), c.want) << fmt::format("{} ({:#010x})", c.in, bits(c.in));
  EXPECT_EQ(fp32_to_fp8e4m3(from_bits(0x7fc00000)), 0x7f);
  EXPECT_EQ(fp32_to_fp8e4m3(from_bits(0xffc00000)), 0xff);
  EXPECT_EQ(fp32_to_fp8e4m3(from_bits(0x7f800001)), 0x7f);
}

TEST(ConvertEncode, Fp8E5m2EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case { float in; uint8_t ieee; uint8_t sat; };
  const Case cases[] = {
      {0.0f, 0x00, 0x00}, {-0.0f, 0x80, 0x80}, {1.0f, 0x3c, 0x3c},
      {57344.0f, 0x7b, 0x7b}, {53248.0f, 0x7a, 0x7a},  // tie between 0x7a and 0x7b
      {std::nextafter(61440.0f, 0.0f), 0x7b, 0x7b},    // just below the overflow midpoint
      {61440.0f, 0x7c, 0x7b},                          // the midpoint: inf, or saturate
      {1e6f, 0x7c, 0x7b}, {-1e6f, 0xfc, 0xfb}, {inf, 0x7c, 0x7b}, {-inf, 0xfc, 0xfb},
      {0x1p-16f, 0x01, 0x01}, {0x1p-17f, 0x00, 0x00}, {-0x1p-17f, 0x80, 0x80},
      {std::nextafter(0x1p-17f, 1.0f), 0x01, 0x01}, {3 * 0x1p-17f, 0x02, 0x02},
      {from_bits(0x00000001), 0x00, 0x00},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(fp32_to_fp8e5m2(c.in, Fp8Overflow::kInfinity), c.ieee) << c.in;
    EXPECT_EQ(fp32_to_fp8e5m2(c.in, Fp8Overflow::kSaturate), c.sat) << c.in;
  }
  for (Fp8Overflow o : {Fp8Overflow::kInfinity, Fp8Overflow::kSaturate}) {
    EXPECT_EQ(fp32_to_fp8e5m2(from_bits(0x7fc00000), o), 0x7e);  // NaN stays NaN
    EXPECT_EQ(fp32_to_fp8e5m2(from_bits(0xffe00000), o), 0xff);  // sign and top payload bit
    EXPECT_EQ(fp32_to_fp8e5m2(from_bits(0x7f800001), o), 0x7e);
  }
}

TEST(ConvertEncode, RoundTripsEveryFiniteValue) {
  for (const Codec& c : codecs()) {
    Mismatches bad;
    for (uint32_t code = 0; code < code_count(c.format); ++code) {
      float x = c.decode(code);
      uint32_t back = c.encode(x);
      // Saturating e5m2 sends its own infinities to ±57344, as specified.
      uint32_t want = std::isinf(x) && !c.to_infinity ? code - 1 : code;
      if (std::isnan(x) ? !std::isnan(c.decode(back)) : back != want)
        bad.add("code {:#x} -> {} -> {:#x}", code, x, back);
    }
    EXPECT_EQ(bad.count, 0u) << codec_name(c) << ":\n" << bad.shown;
  }
}

// ---- tf32 ----

// x rounded in double to tf32's grid: 11 significant bits for normals, multiples of 2^-136
// (tf32's subnormal step) below 2^-126.
float ref_tf32(float x) {
  if (std::isinf(x) || x == 0.0f) return x;
  double d = x;
  int e = 0;
  std::frexp(d, &e);
  double quantum = std::fabs(d) < 0x1p-126 ? 0x1p-136 : std::ldexp(1.0, e - 11);
  double r = std::nearbyint(d / quantum) * quantum;
  if (std::fabs(r) >= 0x1p128) return std::copysign(std::numeric_limits<float>::infinity(), x);
  return float(r);
}

TEST(ConvertTf32, MatchesDoubleRoundingOnEveryGridPointAndTie) {
  Mismatches bad;
  std::mt19937 rng(3);
  for (uint32_t top = 0; top < (1u << 19); ++top) {
    const uint32_t base = top << 13;
    if ((base & 0x7f800000u) == 0x7f800000u && (base & 0x7fffffu) != 0) continue;  // NaN
    for (uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu, uint32_t(rng()) & 0x1fffu}) {
      uint32_t u = base | low;
      if ((u & 0x7fffffffu) > 0x7f800000u) continue;
      float x = from_bits(u);
      uint32_t got = bits(round_to_tf32(x)), want = bits(ref_tf32(x));
      if (got != want) bad.add("{:#010x}: got {:#010x}, want {:#010x}", u, got, want);
    }
  }
  EXPECT_EQ(bad.count, 0u) << bad.shown;
}

TEST(ConvertTf32, EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits(round_to_tf32(1.0f + 0x1p-11f)), bits(1.0f));             // tie, even
  EXPECT_EQ(bits(round_to_tf32(1.0f + 3 * 0x1p-11f)), bits(1.0f + 0x1p-9f));  // tie, odd up
  EXPECT_EQ(bits(round_to_tf32(-0.0f)), 0x80000000u);
  EXPECT_EQ(bits(round_to_tf32(std::numeric_limits<float>::max())), bits(inf));
  EXPECT_EQ(bits(round_to_tf32(-std::numeric_limits<float>::max())), bits(-inf));
  EXPECT_EQ(bits(round_to_tf32(inf)), bits(inf));
  EXPECT_EQ(bits(round_to_tf32(from_bits(0x00001000))), 0x00000000u);  // subnormal tie -> 0
  EXPECT_EQ(bits(round_to_tf32(from_bits(0x00003000))), 0x00004000u);
  // NaN whose payload sits in the dropped bits stays NaN, with its sign.
  EXPECT_EQ(bits(round_to_tf32(from_bits(0x7f800001))), 0x7fc00000u);
  EXPECT_EQ(bits(round_to_tf32(from_bits(0xffa01fff))), 0xffe00000u);
}

// ---- int8 rows ----

struct Int8Result {
  std::vector<int8_t> q;
  std::vector<float> scales;
};

Int8Result quantize(const std::vector<float>& x, size_t rows, size_t cols) {
  Int8Result r{std::vector<int8_t>(x.size(), 99), std::vector<float>(rows, -1.0f)};
  Status s = quantize_int8_rows(x, rows, cols, r.q, r.scales);
  EXPECT_TRUE(s.has_value()) << s.error().to_string();
  return r;
}

TEST(ConvertInt8, TiesRoundToEven) {
  // max 127 gives scale exactly 1, so q = round_half_even(x).
  std::vector<float> x = {127.0f, 2.5f, -2.5f, 3.5f, -3.5f, 0.5f, -0.5f, 1.5f, 126.5f, -126.5f};
  Int8Result r = quantize(x, 1, x.size());
  EXPECT_EQ(r.scales[0], 1.0f);
  EXPECT_EQ(r.q, (std::vector<int8_t>{127, 2, -2, 4, -4, 0, 0, 2, 126, -126}));
  // max 254 gives scale 2: x = 5 is 2.5 -> 2, 7 is 3.5 -> 4.
  std::vector<float> y = {-254.0f, 5.0f, 7.0f, -9.0f, 1.0f};
  Int8Result s = quantize(y, 1, y.size());
  EXPECT_EQ(s.scales[0], 2.0f);
  EXPECT_EQ(s.q, (std::vector<int8_t>{-127, 2, 4, -4, 0}));
}

TEST(ConvertInt8, ZeroAndUnderflowingRows) {
  const float tiny = from_bits(160);  // 160 * 2^-149: max / 127 rounds to 2^-149
  std::vector<float> x = {0.0f, -0.0f, 0.0f,   // all zero
                          1e-45f, 0.0f, 0.0f,  // max / 127 underflows to 0
                          tiny, -tiny, 0.0f};  // scale rounds down, quotient 160 clamps
  Int8Result r = quantize(x, 3, 3);
  EXPECT_EQ(r.scales[0], 0.0f);
  EXPECT_EQ(r.scales[1], 0.0f);
  EXPECT_EQ(bits(r.scales[2]), 1u);
  EXPECT_EQ(r.q, (std::vector<int8_t>{0, 0, 0, 0, 0, 0, 127, -127, 0}));
}

TEST(ConvertInt8, RandomRowsMatchDoubleReference) {
  const size_t rows = 64, cols = 257;
  std::mt19937 rng(4);
  std::vector<float> x(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    // Rows span many magnitudes; some hold values placed on exact ties of their own scale.
    float mag = std::ldexp(1.0f, int(r % 40) - 20);
    std::uniform_real_distribution<float> d(-mag, mag);
    for (size_t c = 0; c < cols; ++c) x[r * cols + c] = d(rng);
  }
  for (size_t r = 0; r < rows; r += 4) {
    float* row = &x[r * cols];
    row[0] = 127.0f * 0x1p-3f;  // scale exactly 2^-3 if nothing in the row is larger
    for (size_t c = 1; c < cols; ++c) row[c] = (float(int(c % 253) - 126) + 0.5f) * 0x1p-3f;
  }
  Int8Result got = quantize(x, rows, cols);
  Mismatches bad;
  for (size_t r = 0; r < rows; ++r) {
    double max_abs = 0;
    for (size_t c = 0; c < cols; ++c)
      max_abs = std::max(max_abs, std::fabs(double(x[r * cols + c])));
    float scale = float(max_abs / 127.0);
    if (bits(got.scales[r]) != bits(scale))
      bad.add("row {}: scale {} want {}", r, got.scales[r], scale);
    for (size_t c = 0; c < cols; ++c) {
      double v = std::nearbyint(double(x[r * cols + c]) / double(scale));
      int want = int(std::clamp(v, -127.0, 127.0));
      if (got.q[r * cols + c] != want)
        bad.add("x[{}, {}] = {}: q {} want {}", r, c, x[r * cols + c], got.q[r * cols + c], want);
    }
  }
  EXPECT_EQ(bad.count, 0u) << bad.shown;
  // The tie rows really exercised ties: x / scale = k + 0.5 exactly.
  EXPECT_EQ(got.scales[0], 0x1p-3f);
  EXPECT_EQ(got.q[1], -124);  // -124.5 -> -124
  EXPECT_EQ(got.q[2], -124);  // -123.5 -> -124
  EXPECT_EQ(got.q[3], -122);  // -122.5 -> -122

  std::vector<float> back(x.size());
  ASSERT_TRUE(dequantize_int8_rows(got.q, got.scales, rows, cols, back).has_value());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      size_t i = r * cols + c;
      ASSERT_EQ(back[i], float(got.q[i]) * got.scales[r]);
      ASSERT_LE(std::fabs(double(back[i]) - double(x[i])), 0.5 * got.scales[r] * (1 + 1e-6)) << i;
    }
}

TEST(ConvertInt8, BadShapesAndValuesAreErrors) {
  std::vector<float> x(6, 1.0f), scales(2);
  std::vector<int8_t> q(6);
  auto expect_error = [](const Status& s, const char* needle) {
    ASSERT_FALSE(s.has_value()) << needle;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find(needle), std::string::npos) << s.error().message();
  };
  expect_error(quantize_int8_rows(x, 2, 0, q, scales), "cols is 0");
  expect_error(quantize_int8_rows(x, 3, 3, q, scales), "input holds 6 elements");
  expect_error(quantize_int8_rows(x, 2, 3, std::span(q).first(5), scales), "q holds 5");
  expect_error(quantize_int8_rows(x, 2, 3, q, std::span(scales).first(1)), "scales holds 1");
  expect_error(quantize_int8_rows(x, size_t(1) << 40, size_t(1) << 40, q, scales), "overflows");
  x[4] = std::numeric_limits<float>::infinity();
  expect_error(quantize_int8_rows(x, 2, 3, q, scales), "x[1, 1] is inf");
  x[4] = std::numeric_limits<float>::quiet_NaN();
  expect_error(quantize_int8_rows(x, 2, 3, q, scales), "x[1, 1] is nan");
  std::vector<float> out(5);
  expect_error(dequantize_int8_rows(q, scales, 2, 3, out), "out holds 5");
  expect_error(dequantize_int8_rows(q, scales, 2, 0, out), "cols is 0");
  EXPECT_TRUE(quantize_int8_rows({}, 0, 4, {}, {}).has_value());  // no rows is fine
}

// ---- arrays: every ISA path equals the single-value functions ----

// Sets MXCSR for a scope: the conversions must not care about rounding mode, FTZ or DAZ.
class ScopedMxcsr {
 public:
  explicit ScopedMxcsr(unsigned csr) : saved_(_mm_getcsr()) { _mm_setcsr(csr); }
  ~ScopedMxcsr() { _mm_setcsr(saved_); }
  ScopedMxcsr(const ScopedMxcsr&) = delete;
  ScopedMxcsr& operator=(const ScopedMxcsr&) = delete;

 private:
  unsigned saved_;
};
constexpr unsigned kHostileMxcsr = 0x1f80 | 0x8000 /*FTZ*/ | 0x0040 /*DAZ*/ | 0x6000 /*RZ*/;

// Inputs for the encoders: every bf16/fp16 neighbourhood (all 2^16 top halves with several low
// halves) and random bit patterns; an odd length so every path has a tail.
std::vector<float> encoder_inputs() {
  std::vector<float> out;
  std::mt19937 rng(5);
  for (uint32_t top = 0; top < 0x10000u; ++top)
    for (uint32_t low : {0x0000u, 0x8000u, 0x7fffu, 0x8001u, 0x0001u, uint32_t(rng()) & 0xffffu})
      out.push_back(from_bits((top << 16) | low));
  for (float x : random_bit_patterns(600'001, 6)) out.push_back(x);
  for (float x : random_in_range(kE4m3, 100'000, 7)) out.push_back(x);
  for (float x : random_in_range(kFp16, 100'000, 8)) out.push_back(x);
  if (out.size() % 2 == 0) out.pop_back();
  return out;
}

template <typename Code>
std::vector<Code> all_codes(size_t repeat) {
  std::vector<Code> out;
  const size_t n = size_t(std::numeric_limits<Code>::max()) + 1;
  for (size_t r = 0; r < repeat; ++r)
    for (size_t c = 0; c < n; ++c) out.push_back(Code(c));
  out.push_back(Code(0x7f));  // odd length
  return out;
}

// Runs one array kernel on src at every runnable ISA (checking the dispatcher chose it) and
// compares it with `expect` bit for bit: the whole array, short arrays at several alignments,
// and the element just past each short array, which must stay untouched.
template <typename Src, typename Dst, typename Fn, typename Bulk>
void check_array_paths(const char* name, const IsaDispatch<Fn>& table, Bulk bulk,
                       const std::vector<Src>& src, const std::vector<Dst>& expect) {
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    Isa chosen = Isa::kScalar;
    table.get(&chosen);
    EXPECT_EQ(chosen, isa) << name << ": dispatcher did not choose " << isa_name(isa);

    std::vector<Dst> got(src.size());
    ASSERT_TRUE(bulk(std::span(src), std::span(got)).has_value());
    Mismatches bad;
    for (size_t i = 0; i < src.size(); ++i)
      if (std::memcmp(&got[i], &expect[i], sizeof(Dst)) != 0)
        bad.add("[{}] got {:#x} want {:#x}", i, raw(got[i]), raw(expect[i]));
    EXPECT_EQ(bad.count, 0u) << name << " at " << isa_name(isa) << ":\n" << bad.shown;

    for (size_t offset = 0; offset < 4; ++offset)
      for (size_t n = 0; n <= 40; ++n) {
        std::vector<Dst> out(n + 1);
        std::memset(out.data(), 0xa5, out.size() * sizeof(Dst));
        Dst canary = out[n];
        ASSERT_TRUE(bulk(std::span(src).subspan(offset, n), std::span(out).first(n)).has_value());
        EXPECT_EQ(std::memcmp(out.data(), &expect[offset], n * sizeof(Dst)), 0)
            << name << " at " << isa_name(isa) << ": n=" << n << " offset=" << offset;
        EXPECT_EQ(std::memcmp(&out[n], &canary, sizeof(Dst)), 0)
            << name << " at " << isa_name(isa) << " wrote past n=" << n;
      }

    {  // The same bits under a hostile MXCSR.
      std::vector<Dst> hostile(src.size());
      Status s;
      {
        ScopedMxcsr csr(kHostileMxcsr);
        s = bulk(std::span(src), std::span(hostile));
      }
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(std::memcmp(hostile.data(), expect.data(), src.size() * sizeof(Dst)), 0)
          << name << " at " << isa_name(isa) << " depends on MXCSR";
    }
  }
}

template <typename Src, typename Dst, typename F>
std::vector<Dst> map(const std::vector<Src>& src, F f) {
  std::vector<Dst> out(src.size());
  for (size_t i = 0; i < src.size(); ++i) out[i] = f(src[i]);
  return out;
}

TEST(ConvertArrays, EncodersMatchScalarOnEveryIsa) {
  const std::vector<float> src = encoder_inputs();
  ASSERT_EQ(src.size() % 2, 1u);
  check_array_paths<float, uint16_t>(
      "fp32_to_bf16", ck::kFp32ToBf16,
      [](std::span<const float> s, std::span<uint16_t> d) { return fp32_to_bf16(s, d); }, src,
      map<float, uint16_t>(src, [](float x) { return fp32_to_bf16(x); }));
  check_array_paths<float, uint16_t>(
      "fp32_to_fp16", ck::kFp32ToFp16,
      [](std::span<const float> s, std::span<uint16_t> d) { return fp32_to_fp16(s, d); }, src,
      map<float, uint16_t>(src, [](float x) { return fp32_to_fp16(x); }));
  check_array_paths<float, uint8_t>(
      "fp32_to_fp8e4m3", ck::kFp32ToFp8e4m3,
      [](std::span<const float> s, std::span<uint8_t> d) { return fp32_to_fp8e4m3(s, d); }, src,
      map<float, uint8_t>(src, [](float x) { return fp32_to_fp8e4m3(x); }));
  for (Fp8Overflow o : {Fp8Overflow::kInfinity, Fp8Overflow::kSaturate}) {
    check_array_paths<float, uint8_t>(
        o == Fp8Overflow::kInfinity ? "fp32_to_fp8e5m2" : "fp32_to_fp8e5m2 (saturating)",
        o == Fp8Overflow::kInfinity ? ck::kFp32ToFp8e5m2 : ck::kFp32ToFp8e5m2Sat,
        [o](std::span<const float> s, std::span<uint8_t> d) { return fp32_to_fp8e5m2(s, d, o); },
        src, map<float, uint8_t>(src, [o](float x) { return fp32_to_fp8e5m2(x, o); }));
  }
}

TEST(ConvertArrays, DecodersMatchScalarOnEveryIsa) {
  const std::vector<uint16_t> halves = all_codes<uint16_t>(1);
  check_array_paths<uint16_t, float>(
      "bf16_to_fp32", ck::kBf16ToFp32,
      [](std::span<const uint16_t> s, std::span<float> d) { return bf16_to_fp32(s, d); }, halves,
      map<uint16_t, float>(halves, [](uint16_t h) { return bf16_to_fp32(h); }));
  check_array_paths<uint16_t, float>(
      "fp16_to_fp32", ck::kFp16ToFp32,
      [](std::span<const uint16_t> s, std::span<float> d) { return fp16_to_fp32(s, d); }, halves,
      map<uint16_t, float>(halves, [](uint16_t h) { return fp16_to_fp32(h); }));
  const std::vector<uint8_t> bytes = all_codes<uint8_t>(9);
  check_array_paths<uint8_t, float>(
      "fp8e4m3_to_fp32", ck::kFp8e4m3ToFp32,
      [](std::span<const uint8_t> s, std::span<float> d) { return fp8e4m3_to_fp32(s, d); }, bytes,
      map<uint8_t, float>(bytes, [](uint8_t b) { return fp8e4m3_to_fp32(b); }));
  check_array_paths<uint8_t, float>(
      "fp8e5m2_to_fp32", ck::kFp8e5m2ToFp32,
      [](std::span<const uint8_t> s, std::span<float> d) { return fp8e5m2_to_fp32(s, d); }, bytes,
      map<uint8_t, float>(bytes, [](uint8_t b) { return fp8e5m2_to_fp32(b); }));
}

TEST(ConvertArrays, MismatchedSpansAreErrorsAndWriteNothing) {
  std::vector<float> src(10, 1.0f);
  std::vector<uint16_t> dst(9, 0x1234);
  Status s = fp32_to_bf16(src, dst);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message().find("destination holds 9 elements but the source has 10"),
            std::string::npos)
      << s.error().message();
  EXPECT_EQ(dst, std::vector<uint16_t>(9, 0x1234));
  std::vector<uint8_t> bytes(11);
  std::vector<float> out(10);
  EXPECT_FALSE(fp8e4m3_to_fp32(bytes, out).has_value());
  EXPECT_FALSE(fp32_to_fp8e5m2(src, bytes, Fp8Overflow::kSaturate).has_value());
  EXPECT_TRUE(fp32_to_fp16(std::span<const float>(), std::span<uint16_t>()).has_value());
}

}  // namespace
}  // namespace recur
