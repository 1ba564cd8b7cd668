// bin/xling_eval: zero-shot cross-lingual transfer with a frozen encoder. Classifiers train on
// English, are chosen on English dev data and are tested on other languages with no training data
// of theirs. Tasks: sent (review sentiment), ner (BiLSTM-CRF) and xnli (BiLSTM pair model).
//   bin/xling_eval sent --model RUN_DIR --train marc-train-en.csv --test en=marc-test-en.csv
//       --test es=marc-test-es.csv [--align W.layer{layer}.txt] [--runs 5] [--out report.json]
//   bin/xling_eval ner --model RUN_DIR --train eng.train --dev eng.testa --test de=deu.testa
//   bin/xling_eval xnli --model RUN_DIR --train SICK.txt --dev dev-en.tsv --test de=dev-de.tsv
#include <CLI/CLI.hpp>
#include <vector>

#include "engine/core/error.h"
#include "eval/xling_harness.h"

int main(int argc, char** argv) {
  CLI::App app{"Zero-shot cross-lingual transfer with a frozen encoder: train on English, test on other languages"};
  app.require_subcommand(1);
  const std::vector<sa::XlingTask> tasks = sa::xling_tasks();
  std::vector<sa::XlingArgs> args(tasks.size());  // each task's, bound to its subcommand's options
  std::vector<CLI::App*> subcommands;
  for (size_t i = 0; i < tasks.size(); ++i) {
    args[i] = tasks[i].defaults;
    CLI::App* c = app.add_subcommand(tasks[i].name, tasks[i].description);
    sa::add_common_options(c, args[i], tasks[i].items);
    sa::add_cjk_options(c, args[i]);
    tasks[i].add_options(c, args[i]);
    c->footer(tasks[i].data);
    subcommands.push_back(c);
  }
  CLI11_PARSE(app, argc, argv);
  try {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!subcommands[i]->parsed()) continue;
      // Without data, say what the task reads and where it comes from, not just the missing flag.
      const bool needs_dev = tasks[i].name != "sent";  // sent holds out a tenth of --train instead
      SA_CHECK(!args[i].train.empty() && !args[i].tests.empty() && (!needs_dev || !args[i].dev.empty()),
               "{} needs --train (English {}){} and at least one --test LANG=FILE.\n{}", tasks[i].name, tasks[i].items,
               needs_dev ? ", --dev (English dev " + tasks[i].items + ")" : "", tasks[i].data);
      std::printf("xling_eval %s: English %s from %s, %zu test file(s), %d runs; embedding them first\n",
                  tasks[i].name.c_str(), tasks[i].items.c_str(), args[i].train.c_str(), args[i].tests.size(), args[i].runs);
      return tasks[i].run(args[i]);
    }
  } catch (const std::exception& e) {
    return sa::tool_failure("xling_eval", e);
  }
  return 0;
}
