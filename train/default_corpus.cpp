#include "train/default_corpus.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "engine/core/error.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

// `p` relative to the working directory when it lies under it (what a person would type).
std::string near_path(const fs::path& p) {
  std::error_code ec;
  const fs::path rel = fs::proximate(p, fs::current_path(ec), ec);
  return !ec && !rel.empty() && *rel.begin() != ".." ? rel.string() : p.string();
}

}  // namespace

std::string checkout_root() {
  fs::path root = fs::current_path();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(exe.parent_path().parent_path() / "data/scripts/handbook_corpus.py"))
    root = exe.parent_path().parent_path();
  return near_path(fs::weakly_canonical(root, ec));
}

DefaultCorpus default_corpus() {
  const fs::path root = checkout_root();
  return {near_path(root / "build/corpus/handbook-en.train.txt"), near_path(root / "build/corpus/handbook-en.heldout.txt"),
          near_path(root / "data/scripts/handbook_corpus.py")};
}

bool is_default_corpus(const DefaultCorpus& d, const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  for (const std::string& f : {d.train, d.heldout})
    if (!ec && p == fs::weakly_canonical(f, ec)) return true;
  return false;
}

void prepare_default_corpus(const DefaultCorpus& d) {
  if (fs::exists(d.train) && fs::exists(d.heldout)) return;
  const char* book = "/usr/share/doc/debian-handbook/html/en-US";
  SA_CHECK(fs::exists(d.script) && fs::is_directory(book),
           "the default corpus {} is missing and cannot be made here: it is extracted from Debian's debian-handbook "
           "package ({}) by {}; run `make deps corpus` (or point train_prefix at your own text with --set "
           "train_prefix=PATH_OR_GLOB)", d.train, book, d.script);
  std::printf("train: extracting the default corpus (English text of Debian's debian-handbook) into %s\n",
              fs::path(d.train).parent_path().string().c_str());
  fs::create_directories(fs::path(d.train).parent_path());
  const std::string cmd = "python3 '" + d.script + "' '" + d.train + "' '" + d.heldout + "' >&2";
  SA_CHECK(std::system(cmd.c_str()) == 0 && fs::exists(d.train), "making the default corpus failed: {}", cmd);
}

}  // namespace sa
