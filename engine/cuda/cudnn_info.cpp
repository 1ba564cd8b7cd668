// cuDNN lives in its own translation units (its headers are slow to compile). The RNN path of the
// ELMo LSTM will join this file's neighbours; for now the engine reports the version it runs with.
#include <cudnn.h>

#include <string>

namespace sa {

std::string cudnn_version_string() {
  size_t v = cudnnGetVersion();
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

}  // namespace sa
