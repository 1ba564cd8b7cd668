// The tasks of bin/xling_eval, in the order its help lists them.
#include "eval/ner_task.h"
#include "eval/nli_task.h"
#include "eval/sentiment_task.h"
#include "eval/xling_harness.h"

namespace sa {

std::vector<XlingTask> xling_tasks() { return {sentiment_xling_task(), ner_xling_task(), nli_xling_task()}; }

}  // namespace sa
