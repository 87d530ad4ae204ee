/* mpirun's command line: options up to the program, the program's own after it. */
#include "launcher/launcher.h"
#include "hashi_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum option_id {
    OPT_NRANKS, OPT_DEVICE, OPT_TRANSPORT, OPT_EXPORT, OPT_BIND_TO, OPT_TAG_OUTPUT,
    OPT_TIMEOUT, OPT_VERBOSE, OPT_HELP, OPT_VERSION,
};

struct option_spec {
    const char *name;           /* accepted after one dash or two, as mpirun users expect */
    enum option_id id;
    bool takes_value;
};

static const struct option_spec option_specs[] = {
    { "n", OPT_NRANKS, true },
    { "np", OPT_NRANKS, true },
    { "c", OPT_NRANKS, true },
    { "device", OPT_DEVICE, true },
    { "transport", OPT_TRANSPORT, true },
    { "x", OPT_EXPORT, true },
    { "bind-to", OPT_BIND_TO, true },
    { "tag-output", OPT_TAG_OUTPUT, false },
    { "timeout", OPT_TIMEOUT, true },
    { "verbose", OPT_VERBOSE, false },
    { "help", OPT_HELP, false },
    { "h", OPT_HELP, false },
    { "version", OPT_VERSION, false },
    { "V", OPT_VERSION, false },
};

static void print_help(void)
{
    printf("Usage: %s [options] program [arguments...]\n"
           "       (also installed as mpiexec)\n"
           "\n"
           "Start an MPI job of N ranks on this node. Options (one or two leading dashes):\n"
           "  -n, -np, -c N         number of ranks (default 1)\n"
           "  --device NAME         messaging device of the ranks (sets HASHI_DEVICE)\n"
           "  --transport NAME      transport of the seed devices (sets HASHI_TRANSPORT)\n"
           "  -x VAR                export mpirun's value of VAR to the ranks\n"
           "  -x VAR=value          set VAR=value in the ranks' environment\n"
           "  --bind-to core|none   bind rank i to core i mod cores (default: core when\n"
           "                        the ranks fit on the cores, else none)\n"
           "  --tag-output          prefix every line of output with \"[rank] \"\n"
           "  --timeout SECONDS     end the job (exit 124) if it runs longer\n"
           "  --verbose             print the launch steps with timestamps on stderr\n"
           "  --help, --version\n"
           "  --                    end of options\n"
           "\n"
           "Exit status: 0 if every rank succeeded; else the first failure's: a rank's\n"
           "exit status, 128+signal, the MPI_Abort code, 1 for a rank that exited\n"
           "without MPI_Finalize, 124 on timeout, 126/127 if the program cannot run.\n"
           "Parameters (HASHI_*) are listed by hashi_info.\n",
           LAUNCHER_NAME);
}

static const struct option_spec *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof option_specs / sizeof option_specs[0]; i++)
        if (strlen(option_specs[i].name) == len && strncmp(option_specs[i].name, name, len) == 0)
            return &option_specs[i];
    return NULL;
}

/* A decimal number in [min, max], nothing else. */
static int parse_number(const char *s, unsigned long min, unsigned long max, unsigned *out)
{
    if (!isdigit((unsigned char)s[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static bool valid_env_name(const char *name, size_t len)
{
    if (len == 0 || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
            return false;
    return true;
}

static void add_edit(struct launch_options *opt, const char *name, size_t name_len, const char *value)
{
    struct env_edit *e = &opt->edits[opt->nedits++];
    e->name = name;
    e->name_len = name_len;
    e->value = value;
}

static int apply_option(struct launch_options *opt, const char *spelled,
                        const struct option_spec *spec, const char *value)
{
    switch (spec->id) {
    case OPT_NRANKS:
        if (parse_number(value, 1, LAUNCHER_MAX_RANKS, &opt->nranks) != 0) {
            launcher_error("%s: '%s' is not a number of ranks (1 to %u)", spelled, value,
                           LAUNCHER_MAX_RANKS);
            return EXIT_LAUNCH_ERROR;
        }
        return -1;
    case OPT_DEVICE:
        add_edit(opt, "HASHI_DEVICE", strlen("HASHI_DEVICE"), value);
        return -1;
    case OPT_TRANSPORT:
        add_edit(opt, "HASHI_TRANSPORT", strlen("HASHI_TRANSPORT"), value);
        return -1;
    case OPT_EXPORT: {
        const char *eq = strchr(value, '=');
        size_t len = eq ? (size_t)(eq - value) : strlen(value);
        if (!valid_env_name(value, len)) {
            launcher_error("%s: '%s' is not VAR or VAR=value", spelled, value);
            return EXIT_LAUNCH_ERROR;
        }
        add_edit(opt, value, len, eq ? eq + 1 : NULL);
        return -1;
    }
    case OPT_BIND_TO:
        if (strcmp(value, "core") == 0) {
            opt->bind = BIND_CORE;
        } else if (strcmp(value, "none") == 0) {
            opt->bind = BIND_NONE;
        } else {
            launcher_error("%s: unknown binding '%s': valid choices are core, none", spelled, value);
            return EXIT_LAUNCH_ERROR;
        }
        return -1;
    case OPT_TAG_OUTPUT:
        opt->tag_output = true;
        return -1;
    case OPT_TIMEOUT:
        /* 0 means no timeout, as in other mpiruns; cap where ms still fit easily. */
        if (parse_number(value, 0, 100000000ul, &opt->timeout_sec) != 0) {
            launcher_error("%s: '%s' is not a number of seconds", spelled, value);
            return EXIT_LAUNCH_ERROR;
        }
        return -1;
    case OPT_VERBOSE:
        opt->verbose = true;
        return -1;
    case OPT_HELP:
        print_help();
        return 0;
    case OPT_VERSION:
        printf("%s (Hashi) %s\n", LAUNCHER_NAME, PACKAGE_VERSION);
        return 0;
    }
    return -1;
}

int options_parse(int argc, char **argv, struct launch_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->nranks = 1;
    opt->bind = BIND_DEFAULT;
    opt->edits = calloc((size_t)(argc > 0 ? argc : 1), sizeof *opt->edits);
    if (!opt->edits) {
        launcher_error("out of memory");
        return EXIT_LAUNCH_ERROR;
    }

    int i = 1;
    while (i < argc) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-')
            break;                          /* the program */
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const struct option_spec *spec = find_option(name, name_len);
        if (!spec) {
            launcher_error("unknown option '%s' (see %s --help)", arg, LAUNCHER_NAME);
            return EXIT_LAUNCH_ERROR;
        }
        const char *value = NULL;
        if (spec->takes_value) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                launcher_error("option '%s' needs a value (see %s --help)", arg, LAUNCHER_NAME);
                return EXIT_LAUNCH_ERROR;
            }
        } else if (eq) {
            launcher_error("option '%.*s' takes no value", (int)(eq - arg), arg);
            return EXIT_LAUNCH_ERROR;
        }
        int rc = apply_option(opt, arg, spec, value);
        if (rc >= 0)
            return rc;
        i++;
    }

    if (i >= argc) {
        launcher_error("no program to run (see %s --help)", LAUNCHER_NAME);
        return EXIT_LAUNCH_ERROR;
    }
    opt->argv = &argv[i];
    return -1;
}

void options_free(struct launch_options *opt)
{
    free(opt->edits);
    opt->edits = NULL;
    opt->nedits = 0;
}
