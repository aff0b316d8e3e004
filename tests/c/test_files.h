/* test_files.h - the C tests' files: one fresh directory per program under
 * $TMPDIR (or /tmp), numbered paths in it, whole-file reads, and its removal
 * at the end.  Header-only, with test_main.h.
 *
 *   if (!files_begin("slg-test-writer")) return 2;   ...   files_end();
 *   tmp_path(path, sizeof path, "x.tfevents");  char *b = read_file(path, &len); */
#ifndef SLG_TEST_FILES_H
#define SLG_TEST_FILES_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_main.h"

static char dir[2048];
static int n_files;

/* Make the program's directory; 0 (with a message) if it can't. */
static inline int files_begin(const char *prefix) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 0;
    }
    return 1;
}

/* A fresh path in it (numbered, so no two calls give the same). */
static inline void tmp_path(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%02d-%s", dir, n_files++, name);
}

/* The whole file (xmalloc'd; the caller frees), NULL if it can't be opened. */
static inline char *read_file(const char *path, uint64_t *len) {
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    char *b = xmalloc((size_t)st.st_size);
    uint64_t got = 0;
    while (got < (uint64_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)((uint64_t)st.st_size - got));
        if (r <= 0) break;
        got += (uint64_t)r;
    }
    close(fd);
    *len = got;
    return b;
}

/* Remove the files the program made, and its directory. */
static inline void files_end(void) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    char path[4400];
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

#endif /* SLG_TEST_FILES_H */
