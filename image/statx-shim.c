/*
 * statx(2) for gVisor releases that refuse AT_NO_AUTOMOUNT.
 *
 * Debian bookworm's runsc (release 20221219) answers statx with EINVAL whenever the flags hold
 * AT_NO_AUTOMOUNT (0x800), which coreutils 9.1 passes in `ls -l`, `ls DIR` and `stat`: under that runtime they
 * print "Invalid argument" for every file. Dockerfile.worker compiles this file into a shared object named in
 * the image's /etc/ld.so.preload, so every dynamically linked program of the sandbox gets this statx in front
 * of glibc's.
 *
 * It calls glibc's statx with the flags as given and, only when that fails with EINVAL and AT_NO_AUTOMOUNT was
 * among the flags, once more without it. A kernel that accepts the flag (runc: the host's Linux) never sees the
 * second call, so nothing changes there. Dropping the flag is harmless in a container: it only stops the call
 * from triggering an automount, and nothing in the sandbox is automounted.
 *
 * A convenience for the worker's own tools, not a defence: a program that does not load it (statically linked,
 * a raw system call) sees gVisor's EINVAL, and only itself is affected.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

typedef int statx_function(int, const char *, int, unsigned int, struct statx *);

static statx_function *next_statx;

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask, struct statx *restrict buffer) {
  statx_function *real = __atomic_load_n(&next_statx, __ATOMIC_RELAXED);
  if (real == 0) {
    real = (statx_function *)dlsym(RTLD_NEXT, "statx");
    if (real == 0) {
      errno = ENOSYS;
      return -1;
    }
    __atomic_store_n(&next_statx, real, __ATOMIC_RELAXED);
  }
  int result = real(dirfd, path, flags, mask, buffer);
  if (result == -1 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT) != 0)
    result = real(dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buffer);
  return result;
}
