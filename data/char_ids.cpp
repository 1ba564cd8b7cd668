#include "data/char_ids.h"

#include <algorithm>

namespace sa::chars {

void token_ids(std::string_view token, int32_t* out) {
  std::fill(out, out + kPerToken, kPad);
  out[0] = kBow;
  if (token == "<S>" || token == "</S>") {
    out[1] = token == "<S>" ? kBos : kEos;
    out[2] = kEow;
    return;
  }
  // Byte-level cut, as bilm-tf: may split a multi-byte character.
  const size_t n = std::min<size_t>(token.size(), kPerToken - 2);
  for (size_t i = 0; i < n; ++i) out[1 + i] = static_cast<unsigned char>(token[i]);
  out[1 + n] = kEow;
}

}  // namespace sa::chars
