/*
 * drvlib.c - helpers shared by the test "framework" libraries
 * (shim_drvlib.c, rel_drvlib.c; see drvlib.h): a 1-rank communicator,
 * unique ids passed between ranks through files, waiting for a child.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drvlib.h"

ncclComm_t drv_solo(void)
{
    ncclUniqueId id;
    ncclComm_t c;

    OK(ncclGetUniqueId(&id));
    OK(ncclCommInitRank(&c, 1, id, 0));
    return c;
}

/* Rank 0: writes the id to a temporary file and renames it into place. */
static void drv_publish_id(const char *path, const ncclUniqueId *id)
{
    char tmp[520];
    int fd;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, id, sizeof(*id)) == sizeof(*id));
    close(fd);
    CHECK(rename(tmp, path) == 0);
}

ncclUniqueId drv_share_id(const char *env_dir, const char *name, int rank)
{
    const char *dir = getenv(env_dir);
    char path[512];
    ncclUniqueId id;
    int fd;

    snprintf(path, sizeof(path), "%s/%s.id", dir ? dir : "/tmp", name);
    if (rank == 0) {
        OK(ncclGetUniqueId(&id));
        drv_publish_id(path, &id);
        return id;
    }
    for (int i = 0; i < 4000; i++) {
        fd = open(path, O_RDONLY);
        if (fd >= 0) {
            CHECK(read(fd, &id, sizeof(id)) == sizeof(id));
            close(fd);
            return id;
        }
        usleep(5000);
    }
    CHECK(!"unique id never appeared");
    return id;
}

int drv_wait_pid(pid_t p)
{
    int st;

    CHECK(waitpid(p, &st, 0) == p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
