/*
 * The job's private directory and names.
 *
 * $TMPDIR/hashi-<uid>.<pid>.<random> (mode 0700) holds the PMIx server's
 * tmpdir and whatever the ranks keep per job. Its basename is also the PMIx
 * namespace and the prefix of the job's POSIX shared memory objects: mpirun
 * and the reaper remove /dev/shm/<basename> and /dev/shm/<basename>.* or -*
 * with the directory, so a job killed at any point leaves nothing behind.
 */
#include "launcher/launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOB_DIR_ATTEMPTS 16
/* Deeper trees than this are not ours: stop rather than exhaust fds. */
#define REMOVE_MAX_DEPTH 32

int job_ids_create(struct job_ids *ids, char *err, size_t errlen)
{
    memset(ids, 0, sizeof *ids);
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";

    /* Ranks may chdir: HASHI_JOB_DIR must not depend on the working directory. */
    char base[PATH_MAX];
    if (!realpath(tmp, base)) {
        snprintf(err, errlen, "cannot use TMPDIR %s: %s", tmp, strerror(errno));
        return -1;
    }

    uint64_t key;
    if (random_bytes(&key, sizeof key) != 0) {
        snprintf(err, errlen, "getrandom: %s", strerror(errno));
        return -1;
    }
    snprintf(ids->key, sizeof ids->key, "%016" PRIx64, key);

    for (int attempt = 0;; attempt++) {
        uint32_t nonce;
        if (random_bytes(&nonce, sizeof nonce) != 0) {
            snprintf(err, errlen, "getrandom: %s", strerror(errno));
            return -1;
        }
        int n = snprintf(ids->dir, sizeof ids->dir, "%s/hashi-%u.%d.%08" PRIx32,
                         strcmp(base, "/") == 0 ? "" : base, (unsigned)getuid(), (int)getpid(), nonce);
        if (n < 0 || (size_t)n >= sizeof ids->dir - sizeof "/pmix") {
            snprintf(err, errlen, "TMPDIR path too long: %s", base);
            return -1;
        }
        if (mkdir(ids->dir, 0700) == 0)
            break;
        if (errno != EEXIST || attempt + 1 == JOB_DIR_ATTEMPTS) {
            snprintf(err, errlen, "cannot create the job directory in %s: %s", base, strerror(errno));
            return -1;
        }
    }
    /* The umask may have taken bits we need, never added any: set exactly 0700. */
    if (chmod(ids->dir, 0700) != 0) {
        snprintf(err, errlen, "chmod %s: %s", ids->dir, strerror(errno));
        rmdir(ids->dir);
        return -1;
    }
    ids->name = strrchr(ids->dir, '/') + 1;

    /* Fits: the length of dir was checked against room for "/pmix" above. */
    int len = snprintf(ids->pmix_dir, sizeof ids->pmix_dir, "%s/pmix", ids->dir);
    if (len < 0 || (size_t)len >= sizeof ids->pmix_dir || mkdir(ids->pmix_dir, 0700) != 0) {
        snprintf(err, errlen, "mkdir %s: %s", ids->pmix_dir, strerror(errno));
        rmdir(ids->dir);
        return -1;
    }
    return 0;
}

/* Remove name (relative to dir_fd) and everything below it, never following symlinks. */
static void remove_tree_at(int dir_fd, const char *name, int depth)
{
    if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
        return;
    if (errno != EISDIR && errno != EPERM)
        return;
    /* A process of the job may still be writing: rescan a few times. */
    for (int pass = 0; pass < 3; pass++) {
        int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return;
        (void)fchmod(fd, 0700);     /* a read-only subdirectory we own cannot be emptied */
        DIR *d = fdopendir(fd);
        if (!d) {
            close(fd);
            return;
        }
        struct dirent *ent;
        while (depth < REMOVE_MAX_DEPTH && (ent = readdir(d)) != NULL) {
            if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
                continue;
            remove_tree_at(dirfd(d), ent->d_name, depth + 1);
        }
        closedir(d);
        if (unlinkat(dir_fd, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY)
            return;
    }
}

/* The job's shared memory objects: the prefix alone, or followed by '.' or '-'. */
static bool is_job_shm_name(const char *entry, const char *prefix, size_t prefix_len)
{
    if (strncmp(entry, prefix, prefix_len) != 0)
        return false;
    char next = entry[prefix_len];
    return next == '\0' || next == '.' || next == '-';
}

void job_ids_cleanup(const char *dir, const char *shm_prefix)
{
    if (dir && dir[0] == '/')
        remove_tree_at(AT_FDCWD, dir, 0);

    if (!shm_prefix || !*shm_prefix)
        return;
    DIR *shm = opendir("/dev/shm");
    if (!shm)
        return;
    size_t prefix_len = strlen(shm_prefix);
    struct dirent *ent;
    while ((ent = readdir(shm)) != NULL)
        if (is_job_shm_name(ent->d_name, shm_prefix, prefix_len))
            remove_tree_at(dirfd(shm), ent->d_name, 0);
    closedir(shm);
}
