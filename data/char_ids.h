// bilm-tf character ids: the UTF-8 bytes of a token, truncated to 48, framed by begin/end-of-word
// ids and padded to 50. Sentence markers <S> and </S> have their own ids. At inference every id is
// shifted by +1 so that 0 marks a padding token (262 rows instead of 261).
#pragma once
#include <cstdint>
#include <string_view>

namespace sa::chars {

constexpr int kPerToken = 50;
constexpr int32_t kBos = 256, kEos = 257, kBow = 258, kEow = 259, kPad = 260;
constexpr int kTrainingChars = 261;   // n_characters while training
constexpr int kInferenceChars = 262;  // n_characters with the +1 shift and padding row

// Writes the 50 training ids of `token` to out ("<S>" and "</S>" map to the sentence markers).
void token_ids(std::string_view token, int32_t* out);

}  // namespace sa::chars
