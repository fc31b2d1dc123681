#include "serve/image_decode.h"

namespace recur::serve {
namespace {

int base64_digit_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

Result<std::vector<uint8_t>> decode_base64(std::string_view text, std::string_view what) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '=' && text.size() - end < 2) --end;
  if (end % 4 == 1)
    return invalid_argument("{}: base64 data of {} characters (before padding) is truncated: expected a multiple of 4 "
                            "characters, or 2 or 3 in the last group",
                            what, end);
  std::vector<uint8_t> out;
  out.reserve(end / 4 * 3 + 2);
  uint32_t bits = 0;
  int nbits = 0;
  for (size_t i = 0; i < end; ++i) {
    const int v = base64_digit_value(text[i]);
    if (v < 0)
      return invalid_argument("{}: base64 byte {} is 0x{:02x}; expected A-Z, a-z, 0-9, '+', '/' or trailing '='", what,
                              i, uint8_t(text[i]));
    bits = (bits << 6) | uint32_t(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(uint8_t(bits >> nbits));
      bits &= (1u << nbits) - 1;
    }
  }
  return out;
}

}  // namespace recur::serve

namespace recur::serve {

std::string encode_base64(std::span<const uint8_t> b) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  s.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0u) |
                       (i + 2 < b.size() ? uint32_t(b[i + 2]) : 0u);
    s += kDigits[v >> 18 & 63];
    s += kDigits[v >> 12 & 63];
    s += i + 1 < b.size() ? kDigits[v >> 6 & 63] : '=';
    s += i + 2 < b.size() ? kDigits[v & 63] : '=';
  }
  return s;
}

}  // namespace recur::serve
