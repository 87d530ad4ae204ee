/*
 * hashi_info: what this Hashi build contains and how the environment configures
 * it, in the spirit of ompi_info and fi_info. It reads the library's tables (the
 * parameter table, the MPI bindings table) and asks libfabric and hwloc what this
 * machine offers; it never initialises MPI, so it works where MPI_Init would fail,
 * including with bad HASHI_* values in the environment: users run it to find out
 * what is valid.
 */
#include "hashi_config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <mpi.h>
#include <rdma/fabric.h>

#include "device/device.h"
#include "mpi/bindings.h"
#include "runtime/params.h"

extern char **environ;

/* Install paths, passed by src/tools/Makefile.inc (shown by --all). */
#ifndef HASHI_INFO_PREFIX
#define HASHI_INFO_PREFIX ""
#endif
#ifndef HASHI_INFO_BINDIR
#define HASHI_INFO_BINDIR ""
#endif
#ifndef HASHI_INFO_LIBDIR
#define HASHI_INFO_LIBDIR ""
#endif
#ifndef HASHI_INFO_INCLUDEDIR
#define HASHI_INFO_INCLUDEDIR ""
#endif


static const char *const program_name = "hashi_info";

struct options {
    bool all;
    bool parsable;
    bool unsupported;
    const char **params;   /* --param names, in command-line order */
    int nparams;
};

/* ---- output: one "label: value" line, human or parsable ---- */

static bool parsable_output;

/* Labels line up at this column in the human format. */
#define LABEL_WIDTH 22

/*
 * One fact. key is the parsable form ("version:hashi"), label the human one.
 * Values are printed on one line: embedded newlines would break parsers.
 */
static void emit(const char *key, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void emit(const char *key, const char *label, const char *fmt, ...)
{
    char value[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    for (char *p = value; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (parsable_output)
        printf("%s:%s\n", key, value);
    else
        printf("%*s: %s\n", LABEL_WIDTH, label, value);
}

static void section(const char *title)
{
    if (!parsable_output)
        printf("\n%s\n", title);
}

/* ---- the parameter table ---- */

/* "DEVICE", "device", "HASHI_DEVICE" and "hashi_device" all name HASHI_DEVICE. */
static int param_lookup(const char *name)
{
    const char *bare = strncasecmp(name, "HASHI_", 6) == 0 ? name + 6 : name;
    for (int i = 0; i < HASHI_P_COUNT; i++)
        if (strcasecmp(hashi_param_table[i].name + 6, bare) == 0)
            return i;
    return -1;
}

/* Levenshtein distance between two short names, case-insensitive. */
static size_t name_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[128];
    if (la >= 127 || lb >= 127)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static bool contains_ignore_case(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return false;
    for (const char *p = haystack; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return true;
    return false;
}

/* Unknown --param: name the parameters the user may have meant. */
static void report_unknown_param(const char *name)
{
    const char *bare = strncasecmp(name, "HASHI_", 6) == 0 ? name + 6 : name;
    size_t tolerance = strlen(bare) / 3 > 2 ? strlen(bare) / 3 : 2;
    char matches[1024] = "";
    size_t used = 0;
    int found = 0;

    for (int i = 0; i < HASHI_P_COUNT; i++) {
        const char *candidate = hashi_param_table[i].name + 6;
        if (name_distance(bare, candidate) <= tolerance ||
            (strlen(bare) >= 3 && contains_ignore_case(candidate, bare))) {
            int n = snprintf(matches + used, sizeof matches - used, "%s%s",
                             found ? ", " : "", hashi_param_table[i].name);
            if (n > 0 && (size_t)n < sizeof matches - used)
                used += (size_t)n;
            found++;
        }
    }
    if (found)
        fprintf(stderr, "%s: unknown parameter '%s'; did you mean %s?\n", program_name, name, matches);
    else
        fprintf(stderr, "%s: unknown parameter '%s'; '%s' alone lists every parameter\n",
                program_name, name, program_name);
}

/*
 * What a parameter is set to. hashi_params_load keeps the default for a value
 * it rejects; the rejected text is returned in *rejected (and the reason in
 * why, when asked) so the table can say why the default is in use.
 */
static const char *param_current_why(int id, const char **rejected, char *why, size_t whylen)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    const char *env = getenv(d->name);
    char err[512];
    *rejected = NULL;
    if (env && hashi_param_check((enum hashi_param_id)id, env, err, sizeof err) != 0) {
        *rejected = env;
        if (why)
            snprintf(why, whylen, "%s", err);
    }
    return hashi_param_str((enum hashi_param_id)id);
}

static const char *param_current(int id, const char **rejected)
{
    return param_current_why(id, rejected, NULL, 0);
}

/* "auto,ofi" -> "auto | ofi" for the human format. */
static void format_choices(const char *choices, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = choices; *p && used + 4 < outlen; p++) {
        if (*p == ',') {
            used += (size_t)snprintf(out + used, outlen - used, " | ");
        } else {
            out[used++] = *p;
            out[used] = '\0';
        }
    }
}

static const char *quoted_if_empty(const char *value)
{
    return value[0] ? value : "\"\"";
}

static int param_name_width(void)
{
    int width = 0;
    for (int i = 0; i < HASHI_P_COUNT; i++) {
        int n = (int)strlen(hashi_param_table[i].name);
        if (n > width)
            width = n;
    }
    return width;
}

static void print_param_parsable(int id)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    const char *rejected;
    const char *value = param_current(id, &rejected);
    printf("param:%s:value:%s\n", d->name, value);
    printf("param:%s:default:%s\n", d->name, d->default_value);
    printf("param:%s:type:%s\n", d->name, hashi_param_type_name(d->type));
    if (d->type == HASHI_PARAM_ENUM && d->choices)
        printf("param:%s:choices:%s\n", d->name, d->choices);
    printf("param:%s:source:%s\n", d->name,
           rejected ? "invalid" : hashi_param_is_set((enum hashi_param_id)id) ? "environment" : "default");
    if (rejected)
        printf("param:%s:rejected:%s\n", d->name, rejected);
    printf("param:%s:doc:%s\n", d->name, d->doc);
}

/* One row of the table: name = value, then default and type, then the doc. */
static void print_param_row(int id, int name_width)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    const char *rejected;
    char why[512];
    const char *value = param_current_why(id, &rejected, why, sizeof why);
    char type[512];

    if (d->type == HASHI_PARAM_ENUM && d->choices) {
        char choices[480];
        format_choices(d->choices, choices, sizeof choices);
        snprintf(type, sizeof type, "enum: %s", choices);
    } else {
        snprintf(type, sizeof type, "%s", hashi_param_type_name(d->type));
    }
    printf("  %-*s = %-10s  default %s; %s%s\n", name_width, d->name, quoted_if_empty(value),
           quoted_if_empty(d->default_value), type,
           rejected ? "" : hashi_param_is_set((enum hashi_param_id)id) ? " [set in the environment]" : "");
    if (rejected)
        printf("  %-*s   ! %s; the default is used\n", name_width, "", why);
    printf("  %-*s   %s\n", name_width, "", d->doc);
}

/* hashi_info --param NAME: one parameter, with every detail. */
static void print_param_detail(int id)
{
    const struct hashi_param_desc *d = &hashi_param_table[id];
    const char *rejected;
    char why[512];
    const char *value = param_current_why(id, &rejected, why, sizeof why);

    if (parsable_output) {
        print_param_parsable(id);
        return;
    }
    printf("%s\n", d->name);
    printf("  value:   %s (%s)\n", quoted_if_empty(value),
           rejected ? "default: the environment's value is not valid"
           : hashi_param_is_set((enum hashi_param_id)id) ? "from the environment" : "default");
    if (rejected)
        printf("  invalid: %s\n", why);
    printf("  default: %s\n", quoted_if_empty(d->default_value));
    printf("  type:    %s\n", hashi_param_type_name(d->type));
    if (d->type == HASHI_PARAM_ENUM && d->choices) {
        char choices[480];
        format_choices(d->choices, choices, sizeof choices);
        printf("  choices: %s\n", choices);
    }
    printf("  doc:     %s\n", d->doc);
}

static void print_param_table(void)
{
    if (parsable_output) {
        for (int i = 0; i < HASHI_P_COUNT; i++)
            print_param_parsable(i);
        return;
    }
    int width = param_name_width();
    section("Parameters (environment variables; mpirun --device, --transport and -x set them for the ranks):");
    for (int i = 0; i < HASHI_P_COUNT; i++)
        print_param_row(i, width);
}

/*
 * Load the table from the environment. On a bad value, report every bad HASHI_*
 * variable (hashi_params_load stops at the first), keep going with defaults.
 */
static void load_params(void)
{
    char err[512];
    if (hashi_params_load(err, sizeof err) == 0)
        return;

    int reported = 0;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "HASHI_", 6) != 0)
            continue;
        char *one[2] = { *e, NULL };
        char one_err[512];
        if (hashi_params_check_environ(one, one_err, sizeof one_err) != 0) {
            fprintf(stderr, "%s: %s\n", program_name, one_err);
            if (parsable_output)
                printf("error:%s\n", one_err);
            reported++;
        }
    }
    if (!reported) {
        fprintf(stderr, "%s: %s\n", program_name, err);
        if (parsable_output)
            printf("error:%s\n", err);
    }
}

/* ---- what was built ---- */

/* The ENUM choices of a parameter minus "auto": the compiled devices or transports. */
static void emit_choices(const char *key, const char *label, enum hashi_param_id id)
{
    const char *choices = hashi_param_table[id].choices ? hashi_param_table[id].choices : "";
    char list[512];
    size_t used = 0;
    list[0] = '\0';

    for (const char *p = choices; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (!(n == 4 && strncmp(p, "auto", 4) == 0)) {
            if (parsable_output)
                printf("%s:%.*s\n", key, (int)n, p);
            else if (used + n + 3 < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%.*s",
                                         used ? ", " : "", (int)n, p);
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (!parsable_output)
        printf("%*s: %s\n", LABEL_WIDTH, label, used ? list : "(none)");
}

static void emit_selection(const char *what, const char *label, enum hashi_param_id id)
{
    const char *rejected;
    const char *value = param_current(id, &rejected);
    char key[64];
    snprintf(key, sizeof key, "default:%s", what);
    if (parsable_output) {
        printf("%s:%s\n", key, hashi_param_table[id].default_value);
        printf("selected:%s:%s\n", what, value);
        return;
    }
    if (rejected || !hashi_param_is_set(id))
        printf("%*s: %s (%s or mpirun --%s chooses another)\n", LABEL_WIDTH, label, value,
               hashi_param_table[id].name, what);
    else
        printf("%*s: %s (from %s; the default is %s)\n", LABEL_WIDTH, label, value,
               hashi_param_table[id].name, hashi_param_table[id].default_value);
}

/*
 * Where the MPI library this program loaded lives: the one users' programs get.
 * Looked up through a symbol this program does not reference, so the answer is
 * the library's own definition, not a copy relocated into the executable.
 */
static void emit_library_path(void)
{
    void *symbol = dlsym(RTLD_DEFAULT, "PMPI_Init");
    Dl_info where;
    if (symbol && dladdr(symbol, &where) && where.dli_fname)
        emit("path:library", "MPI library", "%s", where.dli_fname);
    else
        emit("path:library", "MPI library", "(unknown: PMPI_Init not found)");
}

static void print_build(const struct options *opt)
{
    emit("version:hashi", "Hashi", "%s", PACKAGE_VERSION);
    /* The versions of the standard-ABI header this build implements. */
    emit("version:mpi", "MPI standard", "%d.%d", MPI_VERSION, MPI_SUBVERSION);
    emit("threads", "Thread support",
         "MPI_THREAD_MULTIPLE (one global lock; device collectives step aside, docs/threads.md)");
    if (parsable_output)
        printf("version:abi:%d.%d\n", MPI_ABI_VERSION, MPI_ABI_SUBVERSION);
    else
        printf("%*s: %d.%d (the standard ABI: libmpi_abi.so.%d)\n", LABEL_WIDTH, "MPI ABI",
               MPI_ABI_VERSION, MPI_ABI_SUBVERSION, MPI_ABI_VERSION);
    emit("build:cc", "Build compiler", "%s", HASHI_BUILD_CC);
    if (opt->all) {
        /* autoconf's list starts with a space */
        const char *args = HASHI_CONFIGURE_ARGS;
        args += strspn(args, " ");
        emit("build:configure_args", "Configure arguments", "%s", args[0] ? args : "(none)");
        emit("path:prefix", "Prefix", "%s", HASHI_INFO_PREFIX);
        emit("path:bindir", "Programs", "%s", HASHI_INFO_BINDIR);
        emit("path:libdir", "Libraries", "%s", HASHI_INFO_LIBDIR);
        emit("path:includedir", "Headers", "%s", HASHI_INFO_INCLUDEDIR);
        emit_library_path();
    }
    emit_choices("device", "Devices", HASHI_P_DEVICE);
    emit_choices("transport", "Transports", HASHI_P_TRANSPORT);
    emit_selection("device", "Default device", HASHI_P_DEVICE);
    emit("device_auto", "auto picks", "%s", hashi_device_auto_policy);
    emit_selection("transport", "Default transport", HASHI_P_TRANSPORT);
    if (opt->all) {
        size_t missing = 0;
        for (size_t i = 0; i < hashi_bindings_count; i++)
            if (!hashi_bindings[i].impl)
                missing++;
        emit("functions:total", "MPI functions", "%zu", hashi_bindings_count);
        if (parsable_output)
            printf("functions:implemented:%zu\n", hashi_bindings_count - missing);
        else
            printf("%*s: %zu (%s --unsupported lists the other %zu)\n", LABEL_WIDTH, "Implemented",
                   hashi_bindings_count - missing, program_name, missing);
    }
}

/* ---- libfabric ---- */

static bool name_listed(char **names, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static bool same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_endpoint_kind(const struct fi_info *a, const struct fi_info *b)
{
    return a->fabric_attr && b->fabric_attr && a->domain_attr && b->domain_attr && a->ep_attr &&
           b->ep_attr && same_string(a->fabric_attr->prov_name, b->fabric_attr->prov_name) &&
           same_string(a->fabric_attr->name, b->fabric_attr->name) &&
           same_string(a->domain_attr->name, b->domain_attr->name) && a->ep_attr->type == b->ep_attr->type;
}

static void print_fabric(const struct options *opt)
{
    uint32_t runtime = fi_version();
    struct fi_info *list = NULL;
    const char *filter = getenv("FI_PROVIDER");

    emit("version:libfabric", "libfabric", "%u.%u", FI_MAJOR(runtime), FI_MINOR(runtime));

    /* No hints: every provider that works here (libfabric applies FI_PROVIDER). */
    int rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, NULL, &list);
    if (rc != 0) {
        if (parsable_output)
            printf("providers:none:%s\n", fi_strerror(-rc));
        else
            printf("%*s: none found (%s)%s%s\n", LABEL_WIDTH, "Providers", fi_strerror(-rc),
                   filter ? "; FI_PROVIDER=" : "", filter ? filter : "");
        return;
    }

    size_t count = 0, capacity = 0;
    char **names = NULL;
    for (struct fi_info *fi = list; fi; fi = fi->next) {
        const char *prov = fi->fabric_attr && fi->fabric_attr->prov_name ? fi->fabric_attr->prov_name : "?";
        if (name_listed(names, count, prov))
            continue;
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 16;
            char **grown = realloc(names, capacity * sizeof *names);
            if (!grown) {
                fprintf(stderr, "%s: out of memory\n", program_name);
                break;
            }
            names = grown;
        }
        names[count++] = (char *)prov;
    }

    if (parsable_output) {
        for (size_t i = 0; i < count; i++)
            printf("provider:%s\n", names[i]);
    } else {
        char line[2048];
        size_t used = 0;
        line[0] = '\0';
        for (size_t i = 0; i < count && used < sizeof line; i++)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", i ? ", " : "", names[i]);
        printf("%*s: %s%s%s%s\n", LABEL_WIDTH, "Providers", line,
               filter ? " (FI_PROVIDER=" : "", filter ? filter : "", filter ? ")" : "");
    }

    if (opt->all) {
        section("libfabric endpoints (provider, fabric, domain, endpoint type):");
        for (struct fi_info *fi = list; fi; fi = fi->next) {
            /* Providers list one entry per capability set: show each place once. */
            bool seen = false;
            for (struct fi_info *prev = list; prev != fi && !seen; prev = prev->next)
                seen = same_endpoint_kind(prev, fi);
            if (seen)
                continue;
            const char *prov = fi->fabric_attr && fi->fabric_attr->prov_name ? fi->fabric_attr->prov_name : "?";
            const char *fabric = fi->fabric_attr && fi->fabric_attr->name ? fi->fabric_attr->name : "?";
            const char *domain = fi->domain_attr && fi->domain_attr->name ? fi->domain_attr->name : "?";
            /* fi_tostr returns a static buffer that ends in a newline for some types */
            char ep_type[64];
            snprintf(ep_type, sizeof ep_type, "%s",
                     fi->ep_attr ? fi_tostr(&fi->ep_attr->type, FI_TYPE_EP_TYPE) : "?");
            ep_type[strcspn(ep_type, "\n")] = '\0';
            if (parsable_output)
                printf("endpoint:%s:%s:%s:%s\n", prov, fabric, domain, ep_type);
            else
                printf("  %-16s %-20s %-16s %s\n", prov, fabric, domain, ep_type);
        }
    }
    free(names);
    fi_freeinfo(list);
}

/* ---- hwloc ---- */

static const char *plural(int n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void print_topology(const struct options *opt)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        emit("topology:error", "Topology", "hwloc could not load the topology");
        return;
    }
    int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    int numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);

    if (parsable_output) {
        printf("topology:packages:%d\ntopology:numa_nodes:%d\ntopology:cores:%d\ntopology:pus:%d\n",
               packages, numa, cores, pus);
    } else {
        printf("%*s: %d %s, %d NUMA %s, %d %s, %d %s\n", LABEL_WIDTH, "Topology",
               packages, plural(packages, "package", "packages"), numa, plural(numa, "node", "nodes"),
               cores, plural(cores, "core", "cores"), pus, plural(pus, "PU", "PUs"));
    }

    if (opt->all) {
        unsigned api = hwloc_get_api_version();
        emit("version:hwloc_api", "hwloc API", "%u.%u.%u", api >> 16, (api >> 8) & 0xff, api & 0xff);

        /* What this process may run on: mpirun binds ranks inside this set. */
        hwloc_bitmap_t bound = hwloc_bitmap_alloc();
        if (bound && hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0) {
            char *text = NULL;
            if (hwloc_bitmap_list_asprintf(&text, bound) >= 0) {
                emit("topology:cpubind", "CPU binding", "%s (%d %s)", text, hwloc_bitmap_weight(bound),
                     plural(hwloc_bitmap_weight(bound), "PU", "PUs"));
                free(text);
            }
        }
        hwloc_bitmap_free(bound);

        static const struct { hwloc_obj_type_t type; const char *key, *label; } caches[] = {
            { HWLOC_OBJ_L1CACHE, "topology:l1d", "L1d cache" },
            { HWLOC_OBJ_L2CACHE, "topology:l2", "L2 cache" },
            { HWLOC_OBJ_L3CACHE, "topology:l3", "L3 cache" },
        };
        for (size_t i = 0; i < sizeof caches / sizeof caches[0]; i++) {
            int n = hwloc_get_nbobjs_by_type(topo, caches[i].type);
            hwloc_obj_t first = n > 0 ? hwloc_get_obj_by_type(topo, caches[i].type, 0) : NULL;
            if (!first || !first->attr)
                continue;
            unsigned long long kib = (unsigned long long)first->attr->cache.size / 1024;
            if (kib >= 1024 && kib % 1024 == 0)
                emit(caches[i].key, caches[i].label, "%d x %llu MiB", n, kib / 1024);
            else
                emit(caches[i].key, caches[i].label, "%d x %llu KiB", n, kib);
        }
    }
    hwloc_topology_destroy(topo);
}

/* ---- --unsupported ---- */

static int print_unsupported(void)
{
    size_t missing = 0;
    for (size_t i = 0; i < hashi_bindings_count; i++) {
        if (!hashi_bindings[i].impl) {
            printf("%s\n", hashi_bindings[i].name);
            missing++;
        }
    }
    fflush(stdout);   /* the list first, then the count, also when both go to one pipe */
    fprintf(stderr, "%s: %zu of %zu MPI functions are not implemented yet\n",
            program_name, missing, hashi_bindings_count);
    return 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: %s [--all] [--parsable] [--param NAME]... [--unsupported]\n"
            "\n"
            "Shows the Hashi version, the devices and transports it was built with,\n"
            "the libfabric providers and the hardware topology it finds, and every\n"
            "parameter with its current value (from the environment), default,\n"
            "type and meaning.\n"
            "\n"
            "  -a, --all          everything: also configure arguments, install paths,\n"
            "                     libfabric endpoints, caches, MPI function counts\n"
            "      --param NAME   one parameter (HASHI_DEVICE, DEVICE or device);\n"
            "                     may be repeated\n"
            "      --parsable     machine-readable key:value lines\n"
            "      --unsupported  the MPI functions not implemented yet, one per line\n"
            "  -h, --help         this message\n"
            "  -V, --version      the Hashi version\n",
            program_name);
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    enum { OPT_PARAM = 256, OPT_PARSABLE, OPT_UNSUPPORTED };
    static const struct option longopts[] = {
        { "all", no_argument, NULL, 'a' },
        { "param", required_argument, NULL, OPT_PARAM },
        { "parsable", no_argument, NULL, OPT_PARSABLE },
        { "parseable", no_argument, NULL, OPT_PARSABLE },
        { "unsupported", no_argument, NULL, OPT_UNSUPPORTED },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    opt->params = calloc((size_t)argc, sizeof *opt->params);
    if (!opt->params) {
        fprintf(stderr, "%s: out of memory\n", program_name);
        return 1;
    }
    while ((c = getopt_long(argc, argv, "ahV", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': opt->all = true; break;
        case OPT_PARAM: opt->params[opt->nparams++] = optarg; break;
        case OPT_PARSABLE: opt->parsable = true; break;
        case OPT_UNSUPPORTED: opt->unsupported = true; break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("%s (Hashi) %s\n", program_name, PACKAGE_VERSION); exit(0);
        default:
            fprintf(stderr, "%s --help lists the options\n", program_name);
            return 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (%s --help lists the options)\n",
                program_name, argv[optind], program_name);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options opt = { 0 };
    int status = parse_options(argc, argv, &opt);
    if (status != 0)
        return status;
    parsable_output = opt.parsable;

    if (opt.unsupported) {
        status = print_unsupported();
        free(opt.params);
        return status;
    }

    /* Resolve every --param name before printing anything. */
    for (int i = 0; i < opt.nparams; i++) {
        if (param_lookup(opt.params[i]) < 0) {
            report_unknown_param(opt.params[i]);
            status = 1;
        }
    }
    if (status != 0) {
        free(opt.params);
        return status;
    }

    load_params();

    if (opt.nparams > 0) {
        for (int i = 0; i < opt.nparams; i++)
            print_param_detail(param_lookup(opt.params[i]));
        free(opt.params);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    free(opt.params);

    print_build(&opt);
    print_fabric(&opt);
    print_topology(&opt);
    print_param_table();
    return fflush(stdout) == 0 ? 0 : 1;
}
