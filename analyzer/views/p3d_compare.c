/*
 * p3d_compare.c - --compare: one row of the seed's table per run
 * (p3d_seedtab.c), in the order the runs were given.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_analyse.h"
#include "p3d_compare.h"
#include "p3d_discover.h"
#include "p3d_seedtab.h"
#include "p3d_util.h"

static void p3d_compare_name(const char *dir, char *buf, size_t n)
{
    size_t len = strlen(dir);
    const char *b;

    while (len > 1 && dir[len - 1] == '/')
        len--;
    b = dir + len;
    while (b > dir && b[-1] != '/')
        b--;
    snprintf(buf, n, "%.*s", (int)(dir + len - b), b);
}

/* One run: analyse the newest job under dir into row. */
static int p3d_compare_dir(char *dir, p3d_analyse_fn fn, void *ctx,
                           struct p3d_crow *row)
{
    struct p3d_jobset set;
    struct p3d_vjob s;
    char name[128];

    p3d_compare_name(dir, name, sizeof(name));
    memset(row, 0, sizeof(*row));
    snprintf(row->config, sizeof(row->config), "%s", name);
    if (p3d_discover(&dir, 1, &set) < 0 || !set.n) {
        p3d_sb_add(&row->obs, "no readable traces");
        p3d_error("--compare: no readable trace files under '%s'", dir);
        free(set.jobs);
        return -1;
    }
    p3d_discover_say(&set, 0, dir);
    if (fn(&set.jobs[set.n - 1], ctx) < 0) {
        p3d_sb_addf(&row->obs, "not analysed: --layout does not fit its %d "
                    "ranks", set.jobs[set.n - 1].world_size);
    } else {
        p3d_vjob_sum(&set.jobs[set.n - 1], NULL, &s);
        p3d_seed_row(&set.jobs[set.n - 1], &s, name, row);
        p3d_vjob_free(&s);
    }
    for (int i = 0; i < set.n; i++)
        p3d_analysed_free(&set.jobs[i]);
    free(set.jobs);
    return 0;
}

int p3d_compare_run(char **dirs, int n, const char *json, p3d_analyse_fn fn,
                    void *ctx)
{
    FILE *js = NULL;
    struct p3d_crow row;

    if (json)
        js = strcmp(json, "-") ? fopen(json, "w") : stdout;
    if (json && !js)
        p3d_die("cannot write '%s': %s", json, strerror(errno));
    if (js != stdout)
        p3d_seed_md_head(stdout);
    if (js)
        fputs("[\n", js);
    for (int i = 0; i < n; i++) {
        p3d_compare_dir(dirs[i], fn, ctx, &row);
        if (js != stdout)
            p3d_seed_md_row(stdout, &row);
        if (js) {
            p3d_seed_json_row(js, &row);
            fputs(i + 1 < n ? ",\n" : "\n", js);
        }
        p3d_seed_row_free(&row);
    }
    if (js)
        fputs("]\n", js);
    if (js && js != stdout && fclose(js))
        p3d_error("cannot write '%s': %s", json, strerror(errno));
    return p3d_n_errors ? P3D_EXIT_BAD : 0;
}
