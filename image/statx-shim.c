/*
 * Two answers of gVisor's runsc that break coreutils, made into the kernel's (the "statx shim").
 * Dockerfile.worker compiles this file into a shared object named in the image's /etc/ld.so.preload, so every
 * dynamically linked program of the sandbox gets these functions in front of glibc's.
 *
 * 1. statx(2) with AT_NO_AUTOMOUNT (0x800). Debian bookworm's own runsc (release 20221219) answers EINVAL,
 *    and coreutils 9.1 passes the flag in `ls -l`, `ls DIR` and `stat`: they print "Invalid argument" for
 *    every file. glibc's statx is called with the flags as given and, only when that fails with EINVAL and
 *    the flag was among them, once more without it. A kernel that accepts the flag (runc: the host's Linux;
 *    runsc 20240729) never sees the second call. Dropping the flag is harmless in a container: it only stops
 *    the call from triggering an automount, and nothing in the sandbox is automounted.
 * 2. getxattr(2) and lgetxattr(2) of a symbolic link's `security.*` attribute. runsc 20240729 (Debian's
 *    bookworm-backports) answers EBADF, which `ls -l` prints as "Bad file descriptor" for every link it lists
 *    (and exits 1). A call by path holds no file descriptor, so EBADF is never the file's own answer: it
 *    becomes ENODATA (no such attribute), what Linux answers for a link without a label. Every other answer
 *    is passed on as it is.
 *
 * A convenience for the worker's own tools, not a defence: a program that does not load it (statically linked,
 * a raw system call) sees gVisor's own answer, and only itself is affected.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>

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

typedef ssize_t getxattr_function(const char *, const char *, void *, size_t);

static getxattr_function *next_getxattr;
static getxattr_function *next_lgetxattr;

static ssize_t xattr_by_path(getxattr_function **next, const char *symbol, const char *path, const char *name,
                             void *value, size_t size) {
  getxattr_function *real = __atomic_load_n(next, __ATOMIC_RELAXED);
  if (real == 0) {
    real = (getxattr_function *)dlsym(RTLD_NEXT, symbol);
    if (real == 0) {
      errno = ENOSYS;
      return -1;
    }
    __atomic_store_n(next, real, __ATOMIC_RELAXED);
  }
  ssize_t result = real(path, name, value, size);
  if (result == -1 && errno == EBADF) errno = ENODATA;
  return result;
}

ssize_t getxattr(const char *path, const char *name, void *value, size_t size) {
  return xattr_by_path(&next_getxattr, "getxattr", path, name, value, size);
}

ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size) {
  return xattr_by_path(&next_lgetxattr, "lgetxattr", path, name, value, size);
}
