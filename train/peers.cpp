#include "train/peers.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "train/default_corpus.h"

namespace sa {

namespace fs = std::filesystem;

namespace {

// The PyTorch script the project's CPU figures were first measured against (the peers' shared
// bench folder beside the checkout); it has bench-small's char CNN built in.
std::string torch_script() { return (fs::path(checkout_root()) / "../shared/bench/elmo_torch.py").lexically_normal().string(); }
// A script of the checkout (run from wherever the user is: the job's paths are theirs).
std::string script(const char* path) { return (fs::path(checkout_root()) / path).string(); }

std::vector<std::string> torch_args(const PeerJob& j, std::string& why_not) {
  const TrainConfig& c = *j.config;
  const ElmoOptions& m = c.model;
  const std::vector<std::pair<int, int>> bench_small = {{1, 32}, {2, 32}, {3, 64}, {4, 128}};
  if (m.filters != bench_small || m.n_highway != 1 || m.char_dim != 16)
    why_not = "its script has bench-small's char CNN only";
  else if (!fs::exists(torch_script()))
    why_not = "needs " + torch_script();
  return {torch_script(), j.corpus, "--steps", std::to_string(j.steps), "--warmup", std::to_string(j.warmup),
          "--threads", std::to_string(j.threads),
          "--batch", std::to_string(c.batch_size), "--unroll", std::to_string(c.unroll_steps), "--lstm",
          std::to_string(m.lstm_dim), "--proj", std::to_string(m.projection_dim), "--samples",
          std::to_string(c.n_negative_samples_batch)};
}

std::string last_lines(const std::string& path, int n) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) all.push_back(l);
  std::string s;
  for (size_t i = all.size() > static_cast<size_t>(n) ? all.size() - n : 0; i < all.size(); ++i) s += "\n    " + all[i];
  return s;
}

}  // namespace

const std::vector<Peer>& peers() {
  static const std::vector<Peer> table = {
      {"bilm-tf", "build/peers/bilm-tf/bin/python", "make peers (bilm-tf's own code on TensorFlow 2.21)",
       [](const PeerJob& j, std::string&) {
         return std::vector<std::string>{script("eval/peers/bilm_tf_train.py"), "--options", j.options, "--vocab", j.vocab,
                                         "--corpus", j.corpus, "--steps", std::to_string(j.steps), "--warmup",
                                         std::to_string(j.warmup), "--threads",
                                         std::to_string(j.threads), "--seed", std::to_string(j.config->seed)};
       },
       [](const PeerJob& j, std::string&) {
         return std::vector<std::string>{script("eval/peers/bilm_tf_embed.py"), "--options", j.options, "--weights", j.weights,
                                         "--vocab", j.vocab, "--input", j.input, "--output", j.output, "--threads",
                                         std::to_string(j.threads)};
       }},
      {"torch", "build/peers/torch/bin/python", "make peers (a current PyTorch from PyPI)", torch_args, nullptr},
      {"torch-debian", "/usr/bin/python3", "Debian's python3-torch (torch 1.13)", torch_args, nullptr},
  };
  return table;
}

// Whether the peer's interpreter (and, for Debian's python3, its torch) is on this machine.
static bool present(const Peer& p) {
  const fs::path root = checkout_root();
  if (!fs::exists(fs::path(p.python).is_absolute() ? fs::path(p.python) : root / p.python)) return false;
  if (p.name != "torch-debian") return true;  // Debian's python3 is always there; its torch may not be
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

std::vector<const Peer*> choose_peers(const std::vector<std::string>& names, bool embed) {
  std::vector<const Peer*> out;
  for (const std::string& n : names) {
    if (n.empty()) continue;
    if (n == "auto") {
      for (const Peer& p : peers())
        if ((embed ? bool(p.embed) : bool(p.train)) && present(p)) out.push_back(&p);
      continue;
    }
    const Peer* found = nullptr;
    std::string known;
    for (const Peer& p : peers()) {
      known += (known.empty() ? "" : ", ") + p.name;
      if (p.name == n) found = &p;
    }
    SA_CHECK(found, "--peer {}: no such peer (known: {}, auto)", n, known);
    SA_CHECK(embed ? bool(found->embed) : bool(found->train), "--peer {}: offers no {} benchmark", n,
             embed ? "embedding" : "training");
    out.push_back(found);
  }
  return out;
}

PeerResult run_peer(const Peer& p, const std::vector<std::string>& args, const std::string& log) {
  PeerResult r;
  const fs::path root = checkout_root();
  const std::string python = fs::path(p.python).is_absolute() ? p.python : (root / p.python).string();
  if (!present(p)) {
    r.error = "not installed: " + p.needs;
    return r;
  }
  // fork + exec, not a shell: wait4 then gives the peer's own peak memory, not a shell's.
  const pid_t pid = fork();
  SA_CHECK(pid >= 0, "cannot start peer {}: {}", p.name, std::strerror(errno));
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(127);
    dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(python.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(python.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage u{};
  SA_CHECK(wait4(pid, &status, 0, &u) == pid, "waiting for peer {}: {}", p.name, std::strerror(errno));
  r.peak_rss_mib = u.ru_maxrss / 1024.0;
  std::ifstream in(log);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("tokens_per_s ", 0) == 0) r.tokens_per_s = std::atof(l.c_str() + 13);
    if (l.rfind("version ", 0) == 0) r.version = l.substr(8);
  }
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && r.tokens_per_s > 0;
  if (!r.ok)
    r.error = (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "killed by signal " + std::to_string(WTERMSIG(status))) +
              ", " + log + ":" + last_lines(log, 3);
  return r;
}

void report_peer(const Peer& p, const PeerJob& job, bool embed, double ours, const std::string& log_dir, double ceiling) {
  std::string why_not;
  const std::vector<std::string> args = embed ? p.embed(job, why_not) : p.train(job, why_not);
  if (!why_not.empty()) {
    std::printf("peer %s: skipped (%s)\n", p.name.c_str(), why_not.c_str());
    return;
  }
  const PeerResult r = run_peer(p, args, (fs::path(log_dir) / ("peer-" + p.name + ".log")).string());
  if (!r.ok) {
    std::printf("peer %s: failed (%s)\n", p.name.c_str(), r.error.c_str());
    return;
  }
  std::printf("peer %s%s: %.0f tokens/s | peak RSS %.0f MiB | sensealign / %s: %.2fx%s\n", p.name.c_str(),
              r.version.empty() ? "" : (" (" + r.version + ")").c_str(), r.tokens_per_s, r.peak_rss_mib, p.name.c_str(),
              ours / r.tokens_per_s,
              ceiling > 0 ? fmt::format(" (the ceiling / {}: {:.2f}x)", p.name, ceiling / r.tokens_per_s).c_str() : "");
}

}  // namespace sa
