// LD_PRELOAD shim for the fault-injection tests: kills the process with SIGKILL at a chosen
// rename or file write, as a crash or an OOM kill would.
//   FAULT_KILL_AT_RENAME=k  SIGKILL just before the k-th rename (1-based)
//   FAULT_KILL_AT_WRITE=k   the k-th write to a regular file writes half its bytes, then SIGKILL
//   FAULT_ENOSPC_AT_WRITE=k the k-th and every later write to a regular file fails with ENOSPC,
//                           as on a full disk
//   FAULT_SIGNAL_AT_WRITE=k after the k-th write completes, raise FAULT_SIGNAL (default 15, SIGTERM), as
//                           a scheduler or Ctrl-C would; with FAULT_SIGNAL_AGAIN=1 once more at the next write
//   FAULT_WRITE_MATCH=text  count only writes to files whose path contains `text`
//   FAULT_COUNT=path        at exit, writes "renames N writes M" (a clean run's counts) to path
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long renames, writes;
static int counted;  // whether the write in progress was counted

static long env_long(const char* name) {
  const char* v = getenv(name);
  return v ? atol(v) : 0;
}

static int regular_file(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  const char* match = getenv("FAULT_WRITE_MATCH");
  if (!match) return 1;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = 0;
  return strstr(path, match) != NULL;
}

// Counts a write to a regular file; true when this one is to be cut and the process killed.
static int cut_here(int fd) {
  counted = regular_file(fd);
  if (!counted) return 0;
  return ++writes == env_long("FAULT_KILL_AT_WRITE");
}

// After a counted write completed: the signal, when this is the chosen write (or the one after).
static void signal_after(void) {
  const long k = env_long("FAULT_SIGNAL_AT_WRITE");
  if (!counted || k <= 0) return;
  if (writes == k || (writes == k + 1 && env_long("FAULT_SIGNAL_AGAIN"))) {
    const long sig = env_long("FAULT_SIGNAL");
    raise(sig > 0 ? (int)sig : SIGTERM);
  }
}

// After cut_here counted it: whether this write is to fail as on a full disk.
static int disk_full(int fd) {
  const long k = env_long("FAULT_ENOSPC_AT_WRITE");
  if (k <= 0 || writes < k || !regular_file(fd)) return 0;
  errno = ENOSPC;
  return 1;
}

int rename(const char* from, const char* to) {
  static int (*real)(const char*, const char*);
  if (!real) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  if (++renames == env_long("FAULT_KILL_AT_RENAME")) raise(SIGKILL);
  return real(from, to);
}

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t (*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (cut_here(fd)) {
    real(fd, buf, n / 2);
    raise(SIGKILL);
  }
  if (disk_full(fd)) return -1;
  const ssize_t r = real(fd, buf, n);
  signal_after();
  return r;
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = (ssize_t (*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  if (cut_here(fd)) {
    real(fd, buf, n / 2, at);
    raise(SIGKILL);
  }
  if (disk_full(fd)) return -1;
  const ssize_t r = real(fd, buf, n, at);
  signal_after();
  return r;
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t at) { return pwrite(fd, buf, n, at); }

ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  static ssize_t (*real)(int, const struct iovec*, int);
  if (!real) real = (ssize_t (*)(int, const struct iovec*, int))dlsym(RTLD_NEXT, "writev");
  if (cnt > 0 && cut_here(fd)) {
    struct iovec half = {iov[0].iov_base, iov[0].iov_len / 2};
    real(fd, &half, 1);
    raise(SIGKILL);
  }
  if (disk_full(fd)) return -1;
  const ssize_t r = real(fd, iov, cnt);
  signal_after();
  return r;
}

__attribute__((destructor)) static void report(void) {
  const char* path = getenv("FAULT_COUNT");
  if (!path) return;
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "renames %ld writes %ld\n", renames, writes);
  fclose(f);
}
