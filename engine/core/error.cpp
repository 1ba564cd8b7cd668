#include "engine/core/error.h"

namespace sa {

void fail_message(const std::string& message) { throw Error(message); }

}  // namespace sa
