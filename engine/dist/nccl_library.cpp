// dist/nccl.h: where NCCL is looked for (no CUDA header: the list is tested on any machine).
#include <glob.h>

#include <cstdlib>

#include "engine/dist/nccl.h"

namespace sa::dist {

std::vector<std::string> nccl_library_candidates(const std::vector<std::string>& lib_roots) {
  std::vector<std::string> out;
  if (const char* p = std::getenv("SA_NCCL_LIBRARY"); p && *p) out.push_back(p);
  out.push_back("libnccl.so.2");
  out.push_back("libnccl.so");
  std::vector<std::string> roots = lib_roots;
  if (roots.empty()) {
    for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
      if (const char* v = std::getenv(env); v && *v) roots.push_back(std::string(v) + "/lib");
    if (const char* home = std::getenv("HOME"); home && *home) roots.push_back(std::string(home) + "/.local/lib");
    for (const char* r : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) roots.push_back(r);
  }
  for (const std::string& root : roots)
    for (const char* kind : {"site-packages", "dist-packages"}) {
      const std::string pattern = root + "/python3*/" + kind + "/nvidia/nccl/lib/libnccl.so.2";
      glob_t g{};
      if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
      ::globfree(&g);
    }
  return out;
}

}  // namespace sa::dist
