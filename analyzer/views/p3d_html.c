/*
 * p3d_html.c - --html FILE: the report as one self-contained HTML page
 * (inline CSS and SVG only: no scripts, no fonts, nothing fetched), so it
 * can be mailed, archived and opened anywhere.  Sections: job, findings,
 * coordinate map, timeline, time per rank, memory, communicators.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "p3d_html_parts.h"
#include "p3d_util.h"

static const char p3d_html_css[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,"
    "'DejaVu Sans',sans-serif;margin:20px 28px;color:#222;max-width:1180px}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:22px 0 6px;"
    "border-bottom:1px solid #ddd;padding-bottom:3px}"
    "h3.figtitle{font-size:13px;letter-spacing:.08em;color:#555;"
    "margin:4px 0}"
    "code{font:12px monospace;background:#f4f4f4;padding:1px 3px;"
    "word-break:break-all}"
    ".meta td{padding:1px 10px 1px 0;vertical-align:top}"
    ".note{color:#666;font-size:12px}"
    "ul.findings li{margin:2px 0}"
    "svg text{font:11px system-ui,'DejaVu Sans',sans-serif;fill:#333}"
    "svg .stagebox{fill:#fafafa;stroke:#999}"
    "svg .stagetitle{font-weight:bold;font-size:12px}"
    "svg .tpbox{fill:#e8f0fa;stroke:#4e79a7;stroke-width:1.5}"
    "svg .rank{fill:#fff;stroke:#555}"
    "svg .rank.missing{fill:#f6d5d5;stroke:#b22}"
    "svg .ranktext{font-size:11px}"
    "svg .pp{stroke:#e15759;stroke-dasharray:4 3;stroke-width:1.5}"
    "svg .tick{stroke:#ddd}svg .iterline{stroke:#333;stroke-dasharray:2 2}"
    "svg .ticklabel{font-size:10px;fill:#666}"
    "svg .barlabel{font-size:11px;fill:#444}"
    ".legend{margin:4px 0 0 190px;font-size:12px}"
    ".key{margin-right:12px;white-space:nowrap}"
    ".key i,i.sw{display:inline-block;width:11px;height:11px;"
    "margin-right:4px;vertical-align:-1px;border:1px solid #0002}"
    "table.traffic{border-collapse:collapse;font-size:12px}"
    "table.traffic td,table.traffic th{border:1px solid #ddd;"
    "padding:2px 6px;text-align:left}"
    "p.groups{margin:2px 0;font-size:13px}";

void p3d_html_esc(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        case 0: fputc(' ', f); break;
        default:
            if (c < 0x20 && c != '\n' && c != '\t')
                fprintf(f, "&#%u;", 0x2400u + c); /* control pictures */
            else if (c >= 0x80)
                fprintf(f, "&#%u;", c); /* bytes as Latin-1: valid */
            else
                fputc(c, f);
        }
    }
}

static void p3d_html_cmdline(FILE *f, const struct p3d_job *job)
{
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        size_t n = r->cmdline_len;
        if (r->failed || !r->cmdline)
            continue;
        while (n && !r->cmdline[n - 1])
            n--;
        fputs("<tr><td>command</td><td><code>", f);
        p3d_html_esc(f, r->cmdline, n);
        fputs("</code></td></tr>\n", f);
        return;
    }
}

static void p3d_html_hosts(FILE *f, const struct p3d_job *job)
{
    int n = 0;

    fputs("<tr><td>hosts</td><td>", f);
    for (int i = 0; i < job->n_ranks && n < 32; i++) {
        const char *h = job->ranks[i].hdr.hostname;
        if (!p3d_job_host_first(job, i))
            continue;
        fputs(n++ ? ", " : "", f);
        p3d_html_esc(f, h, strnlen(h, P3D_HOST_LEN));
    }
    fputs("</td></tr>\n", f);
}

static void p3d_html_head(FILE *f, const struct p3d_job *job)
{
    char when[64];
    int ok = p3d_job_ranks_found(job);

    p3d_job_started(job, when, sizeof(when));
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "\n<meta http-equiv=\"Content-Security-Policy\" content=\""
          "default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
          "<title>p3dtrace: ", f);
    p3d_html_esc(f, job->job_id, strlen(job->job_id));
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>p3dtrace "
            "report: job ", p3d_html_css);
    p3d_html_esc(f, job->job_id, strlen(job->job_id));
    fprintf(f, "</h1>\n<table class=\"meta\"><tr><td>ranks</td><td>%d of %d "
            "have readable traces</td></tr>\n<tr><td>started</td><td>%s</td>"
            "</tr>\n", ok, job->world_size, when);
    p3d_html_hosts(f, job);
    p3d_html_cmdline(f, job);
    fputs("</table>\n", f);
}

int p3d_html_write(const char *path, const struct p3d_job *job,
                   const struct p3d_vsel *sel)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    struct p3d_vjob s;

    if (!f)
        return p3d_error("cannot write '%s': %s", path,
                         strerror(errno));
    p3d_vjob_sum(job, sel, &s);
    p3d_html_head(f, job);
    p3d_html_findings(f, job, &s);
    p3d_html_map(f, job);
    p3d_html_timeline(f, job, &s);
    p3d_html_bars(f, job, &s);
    p3d_html_memory(f, job, &s);
    p3d_html_traffic(f, job);
    fputs("<p class=\"note\">Made by p3d-analyze (p3dtrace).</p>\n"
          "</body></html>\n", f);
    p3d_vjob_free(&s);
    if (f != stdout ? fclose(f) != 0 : fflush(f) != 0)
        return p3d_error("cannot write '%s': %s", path,
                         strerror(errno));
    return 0;
}
