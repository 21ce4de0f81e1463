/*
 * p3d_safedir.c - open the trace folders (P3D_TRACE_DIR and the job
 * folder) one component at a time from the parent's descriptor, and
 * refuse what another user controls inside a folder others can write.
 *
 * RATIONALE: the job folder's name is predictable (slurm-<id>,
 * <MASTER_ADDR>-<MASTER_PORT>, ...), so in a shared folder such as a
 * team's /tmp/traces another user can create it first, as a symlink or
 * as a folder of theirs, and receive traces that carry the job's command
 * line, environment, call stacks and timings.  O_EXCL|O_NOFOLLOW on the
 * rank file does not help when the folder above it is theirs.
 *
 * The rule, applied whatever fs.protected_symlinks says.  "Writable by
 * others" means S_IWGRP or S_IWOTH in the folder's mode.
 *   - A symlink inside a folder writable by others is followed only when
 *     it is ours or the folder owner's: Linux fs.protected_symlinks
 *     (Documentation/admin-guide/sysctl/fs.rst: symlinks are followed
 *     "only when outside a sticky world-writable directory, or when the
 *     uid of the symlink and follower match, or when the directory owner
 *     matches the symlink's owner").
 *   - A folder of P3D_TRACE_DIR inside a folder writable by others is
 *     ours, or sticky (a team's shared /tmp/traces 1777 keeps working).
 *   - The job folder, whose name the shim chose, inside a folder writable
 *     by others is ours and writable by group or others only as far as
 *     our umask gives: OpenSSH's StrictModes (the user's files and the
 *     folders above them must be the user's, not writable by others).
 * Links and folders inside folders nobody else can write are trusted as
 * they are: they are the user's choice (P3D_TRACE_DIR=/scratch/traces as
 * a link to /lustre/...).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_safedir.h"

#define P3D_SD_OPEN (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#define P3D_SD_UMASK_DEFAULT 022 /* if /proc/self/status cannot say */

static const char p3d_sd_link[] =
    "a symlink owned by another user, in a folder others can write";
static const char p3d_sd_foreign[] =
    "a folder owned by another user, in a folder others can write";
static const char p3d_sd_open[] =
    "writable by group or others beyond the umask, in a folder others "
    "can write";
static const char p3d_sd_notdir[] =
    "not a folder, in a folder others can write";

int p3d_safedir_writable_by_others(const struct stat *st)
{
    return (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

int p3d_safedir_link_ok(const struct stat *parent, const struct stat *link,
                        unsigned euid)
{
    return !p3d_safedir_writable_by_others(parent) || link->st_uid == euid ||
           link->st_uid == parent->st_uid;
}

int p3d_safedir_dir_ok(const struct stat *parent, const struct stat *dir,
                       unsigned euid, int strict, unsigned umask_bits)
{
    if (!S_ISDIR(dir->st_mode))
        return 0;
    if (!p3d_safedir_writable_by_others(parent))
        return 1;
    if (!strict)
        return dir->st_uid == euid || (dir->st_mode & S_ISVTX) != 0;
    return dir->st_uid == euid &&
           (dir->st_mode & (S_IWGRP | S_IWOTH) & umask_bits) == 0;
}

/* The umask from /proc/self/status ("Umask:\t0022"), without setting it. */
static unsigned p3d_safedir_read_umask(void)
{
    char buf[4096];
    const char *p;
    unsigned v = 0;
    ssize_t n;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return P3D_SD_UMASK_DEFAULT;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return P3D_SD_UMASK_DEFAULT;
    buf[n] = '\0';
    p = strstr(buf, "\nUmask:");
    if (p == NULL)
        return P3D_SD_UMASK_DEFAULT;
    for (p += 7; *p == ' ' || *p == '\t'; p++)
        ;
    if (*p < '0' || *p > '7')
        return P3D_SD_UMASK_DEFAULT;
    for (; *p >= '0' && *p <= '7'; p++)
        v = v * 8 + (unsigned)(*p - '0');
    return v & 0777;
}

/* Open `name` in `dfd` without following a link; create it if missing. */
static int p3d_safedir_try(int dfd, const char *name)
{
    int fd = openat(dfd, name, P3D_SD_OPEN | O_NOFOLLOW);

    if (fd >= 0 || errno != ENOENT)
        return fd;
    if (mkdirat(dfd, name, 0777) != 0 && errno != EEXIST)
        return -1;
    return openat(dfd, name, P3D_SD_OPEN | O_NOFOLLOW); /* a link: ELOOP */
}

/* `name` in `dfd` is no folder to enter as it is: follow it if it is a
 * link the rule allows. */
static int p3d_safedir_follow(int dfd, const struct stat *pst,
                              const char *name, const char **why)
{
    struct stat lst;

    if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISLNK(lst.st_mode)) {
        if (p3d_safedir_writable_by_others(pst))
            *why = p3d_sd_notdir;
        errno = ENOTDIR;
        return -1;
    }
    if (!p3d_safedir_link_ok(pst, &lst, (unsigned)geteuid())) {
        *why = p3d_sd_link;
        errno = EPERM;
        return -1;
    }
    return openat(dfd, name, P3D_SD_OPEN);
}

/*
 * Open (or create) folder `name` in `dfd` and check it against its
 * parent.  A link followed on the way to P3D_TRACE_DIR leads where the
 * user's link says; the job folder (strict) is checked wherever it is.
 */
static int p3d_safedir_entry(int dfd, const char *name, int strict,
                             const char **why)
{
    unsigned euid = (unsigned)geteuid();
    struct stat pst, st;
    int fd, followed = 0;

    if (fstat(dfd, &pst) != 0)
        return -1;
    fd = p3d_safedir_try(dfd, name);
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        fd = p3d_safedir_follow(dfd, &pst, name, why);
        followed = 1;
    }
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    if ((followed && !strict) ||
        p3d_safedir_dir_ok(&pst, &st, euid, strict,
                           strict ? p3d_safedir_read_umask() : 0))
        return fd;
    *why = st.st_uid != euid ? p3d_sd_foreign : p3d_sd_open;
    close(fd);
    errno = EPERM;
    return -1;
}

/* close(2) that leaves errno as it was. */
static void p3d_safedir_close(int fd)
{
    int err = errno;

    close(fd);
    errno = err;
}

int p3d_safedir_open_path(const char *path, const char **why, size_t *bad)
{
    char name[NAME_MAX + 1];
    const char *p = path, *end;
    int dfd, fd;

    *why = NULL;
    *bad = strlen(path);
    dfd = open(path[0] == '/' ? "/" : ".", P3D_SD_OPEN);
    while (dfd >= 0) {
        while (*p == '/')
            p++;
        if (*p == '\0')
            return dfd;
        end = strchrnul(p, '/');
        if (end - p > NAME_MAX) {
            p3d_safedir_close(dfd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, (size_t)(end - p));
        name[end - p] = '\0';
        p = end;
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0)
            fd = openat(dfd, name, P3D_SD_OPEN);
        else
            fd = p3d_safedir_entry(dfd, name, 0, why);
        p3d_safedir_close(dfd);
        if (fd < 0 && *why != NULL)
            *bad = (size_t)(end - path);
        dfd = fd;
    }
    return -1;
}

int p3d_safedir_open_own(int dirfd, const char *name, const char **why)
{
    *why = NULL;
    return p3d_safedir_entry(dirfd, name, 1, why);
}
