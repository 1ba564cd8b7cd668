// The largest pieces of input our readers accept. A file beyond them is broken or hostile, and
// gets a clear error naming it (and the line) instead of a reader that grows its memory without
// bound. Sizes that a file states (a header's length, a tensor's shape) are checked against the
// file's own length where they are read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <istream>
#include <string>
#include <string_view>

namespace sa {

constexpr size_t kMaxLineBytes = size_t{1} << 20;      // a line of a text file: a sentence, an entry
constexpr size_t kMaxTokenBytes = 4096;                // a token of a corpus or a vocabulary
constexpr size_t kMaxSettingsBytes = size_t{16} << 20;  // a config or a JSON settings file

// std::getline with the line limit: fails naming `path` and the line's number when it is longer.
bool read_line(std::istream& in, std::string& line, const std::string& path, int64_t lineno);
// Fails naming path:lineno when `token` is longer than kMaxTokenBytes.
void check_token_length(std::string_view token, const std::string& path, int64_t lineno);
// Fails naming the file when the sizes a header states (`counts`, multiplied) need more than the
// file holds at `min_bytes_each` bytes per item (a number in text takes at least 2: a digit and a
// separator): checked before anything is allocated from them. `what` names the header.
void check_stated_size(const std::string& path, std::initializer_list<int64_t> counts, uint64_t min_bytes_each,
                       const char* what);
// Fails naming the file when it is larger than `limit` bytes (`what` says which kind it is).
void check_file_size(const std::string& path, size_t limit, const char* what);

}  // namespace sa
