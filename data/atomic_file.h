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
// Puts a finished, closed temporary file `tmp` (ours, or written by a library such as HDF5) in place of `path`:
// fsync, rename, sync the directory; removes `tmp` and fails naming `path` when a step fails.
void commit_file(const std::string& tmp, const std::string& path);

}  // namespace sa
