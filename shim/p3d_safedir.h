/*
 * p3d_safedir.h - open a trace folder so that no path another user
 * planted can redirect or capture a trace (p3d_safedir.c says the rule).
 *
 * Both functions return an O_DIRECTORY|O_CLOEXEC descriptor, or -1 with
 * errno set.  A refusal by the rule (not a plain error such as EACCES or
 * ENOSPC) also stores a static reason in *why; *why is NULL otherwise.
 *
 * Thread safety: reentrant; no allocation, no stdio, no lock.  The umask
 * is read from /proc/self/status, never changed.
 */
#ifndef P3D_SAFEDIR_H
#define P3D_SAFEDIR_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Open folder `path` (absolute, or relative to the working folder),
 * creating missing components with mode 0777 less the umask, one
 * component at a time from its parent's descriptor.  A refused component
 * is path[0..*bad) (the whole path when *bad == strlen(path)).
 */
int p3d_safedir_open_path(const char *path, const char **why, size_t *bad);

/*
 * Open folder `name` (one component) in `dirfd`, creating it if missing,
 * with the strict rule for a folder the shim names itself: where `dirfd`
 * is writable by others, the folder must be ours and private.
 */
int p3d_safedir_open_own(int dirfd, const char *name, const char **why);

/*
 * The rule's parts, exposed for unit tests.  `parent` is the folder that
 * holds the entry; `umask_bits` the process umask.
 */
int p3d_safedir_writable_by_others(const struct stat *st);
int p3d_safedir_link_ok(const struct stat *parent, const struct stat *link,
                        unsigned euid);
int p3d_safedir_dir_ok(const struct stat *parent, const struct stat *dir,
                       unsigned euid, int strict, unsigned umask_bits);

#endif
