// Files written atomically: a temporary file next to the target, every byte written, fsync, then
// rename. A crash leaves either the old file or the new one under the final name, never a part.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace sa {

// Writes the concatenation of `parts` (pointer, length) to `path`.
void write_parts_atomically(const std::string& path, const std::vector<std::pair<const char*, size_t>>& parts);
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace sa
