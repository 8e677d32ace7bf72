/* sgfabric sweep: runs a study (parameters x values x seeds, analysis/sweep/sweeplib.py) with
 * Snakemake and the workflow analysis/sweep/Snakefile, locally on every core or on Slurm.
 *
 * This command only checks and prepares; Snakemake does the work, so that a sweep is resumable
 * (a finished point is a Snakemake target, never run again) and runs wherever Snakemake runs.
 * Before anything is written it checks the study file (by sweeplib.py, which reads the option
 * tables from this very binary), DIR (the rules of docs/outputs.md, adapted: a sweep directory
 * grows point by point, so it is resumed rather than replaced), and that snakemake is installed.
 * Then it writes DIR/study.yaml (the study's copy) and DIR/sweep.json (what the workflow needs:
 * this binary's path) and replaces itself with snakemake: execvp with an argument vector, never
 * a shell, so that no character of STUDY or DIR is interpreted. */
#define _XOPEN_SOURCE 700 /* realpath, mkstemp */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "run_common.h"
#include "sgf_version.h"

/* The value of sweep.json's "format": what makes a directory a sweep of sgfabric, resumable. */
#define SWEEP_FORMAT "sgfabric-sweep/1"
#define SWEEP_MAX_ARGS 64

enum { SWEEP_OPT_OUT, SWEEP_OPT_CORES, SWEEP_OPT_JOBS, SWEEP_OPT_SLURM, SWEEP_OPT_PROFILE };

static const struct cli_option sweep_options[] = {
  { "out", 'o', CLI_VALUE, SWEEP_OPT_OUT, "DIR",
    "the sweep's directory: new, empty, or a previous sweep of sgfabric (resumed: finished points are kept)" },
  { "cores", 0, CLI_VALUE, SWEEP_OPT_CORES, "N",
    "cores Snakemake uses on this machine (default: all of them); a point takes one per simulation it runs "
    "at once (compare: one per fabric)" },
  { "jobs", 0, CLI_VALUE, SWEEP_OPT_JOBS, "N",
    "with --slurm or --profile: points submitted at once (default with --slurm: 64)" },
  { "slurm", 0, CLI_FLAG, SWEEP_OPT_SLURM, NULL,
    "run each point as a Slurm job (Snakemake's --slurm, which needs Slurm accounting: sacct)" },
  { "profile", 0, CLI_VALUE, SWEEP_OPT_PROFILE, "DIR",
    "a Snakemake profile (analysis/sweep/profiles/slurm: Slurm through sbatch, no accounting needed)" },
  CLI_TABLE_END,
};

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric sweep STUDY --out DIR [--cores N] [--jobs N] [--slurm] [--profile DIR]\n\n"
               "Runs every point of the study (a YAML file: a subcommand, run or compare, its options, the\n"
               "parameters swept with their values, the seeds; docs/artifacts.md) with Snakemake and writes\n"
               "DIR/sweep.csv (one row per point and fabric: the swept parameters, seed, fabric, MFU,\n"
               "iteration time, exposed communication per group, the fabrics' counters, wall time) and\n"
               "DIR/figures/METRIC.png (each metric of the study against its x parameter, one line per\n"
               "fabric, seeds as error bars). Each point is DIR/points/ID, written whole or not at all:\n"
               "running the command again (after a failure, an interruption, or with more values) runs\n"
               "only the points that are missing.\n"
               "The study is checked before anything is written: an unknown key, option or parameter, or\n"
               "a key without values is refused with the file and the key (exit 1). DIR must be new (its\n"
               "parent existing), empty, or a previous sweep of sgfabric (it holds sweep.json with\n"
               "\"format\": \"" SWEEP_FORMAT "\"); any other directory is refused (exit 2), as are the\n"
               "current directory, one holding it, a file and a symbolic link. Needs snakemake (Debian:\n"
               "apt-get install snakemake) and python3-yaml.\n\n");
  cli_print_options(out, sweep_options, NULL);
  fprintf(out, "  -h, --help                 this help\n"
               "Exit status: 0 done, 1 error (a bad study, snakemake missing, a point failed: the others\n"
               "are finished and kept), 2 usage error or refused --out; interrupted: Snakemake's status.\n");
}

/* Whether path is base or inside it (both absolute and canonical). */
static int is_inside(const char *path, const char *base)
{
  size_t n = strlen(base);
  return strncmp(path, base, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && base[0] == '/'));
}

/* Reads at most 64 KiB of a regular file (not through a symbolic link); NULL if it cannot. */
static char *read_small(const char *path, size_t *len)
{
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (1 << 20)) {
    size_t cap = (size_t)st.st_size, n = 0;
    text = malloc(cap + 1);
    ssize_t got;
    while (text && n < cap && (got = read(fd, text + n, cap - n)) > 0)
      n += (size_t)got;
    if (text) {
      text[n] = '\0';
      *len = n;
    }
  }
  close(fd);
  return text;
}

static int is_sweep(const char *dir)
{
  char path[PATH_MAX + 32];
  size_t len;
  snprintf(path, sizeof path, "%s/sweep.json", dir);
  char *text = read_small(path, &len);
  int yes = text && strstr(text, "\"format\": \"" SWEEP_FORMAT "\"") != NULL;
  free(text);
  return yes;
}

static int is_empty_dir(const char *dir)
{
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  struct dirent *e;
  int empty = 1;
  while (empty && (e = readdir(d)) != NULL)
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  return empty;
}

/* The first executable NAME on $PATH, into found; 0 or -1. */
static int find_on_path(const char *name, char *found, size_t len)
{
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
    size_t n = strcspn(p, ":");
    snprintf(found, len, "%.*s/%s", (int)n, n ? p : ".", name);
    struct stat st;
    if (stat(found, &st) == 0 && S_ISREG(st.st_mode) && access(found, X_OK) == 0)
      return 0;
    p += n + (p[n] == ':');
  }
  return -1;
}

/* Writes text to dir/name through a temporary file renamed over it (never half-written), and
 * only when the content differs: the study's copy is an input of the table, whose date must not
 * change on a rerun that changes nothing. 0 or -1 with a message. */
static int write_if_changed(const char *dir, const char *name, const char *text, size_t len)
{
  char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t old_len;
  char *old = read_small(path, &old_len);
  int same = old && old_len == len && memcmp(old, text, len) == 0;
  free(old);
  if (same)
    return 0;
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", dir, name);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "sgfabric sweep: cannot write in %s: %s\n", dir, strerror(errno));
    return -1;
  }
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, text + done, len - done);
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  int failed = done != len;
  failed |= close(fd) != 0;
  if (failed || rename(tmp, path) != 0) {
    fprintf(stderr, "sgfabric sweep: cannot write %s: %s\n", path, strerror(errno ? errno : EIO));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* Appends s to buf as a JSON string. */
static void append_json_string(char *buf, size_t size, const char *s)
{
  size_t n = strlen(buf);
  if (n + 2 >= size)
    return;
  buf[n++] = '"';
  for (; *s && n + 8 < size; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      n += (size_t)snprintf(buf + n, size - n, "\\%c", ch);
    else if (ch < 0x20)
      n += (size_t)snprintf(buf + n, size - n, "\\u%04x", ch);
    else
      buf[n++] = (char)ch;
  }
  buf[n++] = '"';
  buf[n] = '\0';
}

/* Runs the study check (sweeplib.py check STUDY --sgfabric SELF) and waits: its messages go to
 * our stdout and stderr. Returns its exit status, or 1 when it could not run. */
static int check_study(const char *python, const char *script, const char *study, const char *self)
{
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char *argv[] = { (char *)python, (char *)script, "check", (char *)study, "--sgfabric", (char *)self, NULL };
    execv(python, argv);
    fprintf(stderr, "sgfabric sweep: cannot run %s: %s\n", python, strerror(errno));
    _exit(127);
  }
  if (pid < 0) {
    fprintf(stderr, "sgfabric sweep: cannot start the study check: %s\n", strerror(errno));
    return 1;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int cmd_sweep(int argc, char **argv)
{
  const char *study = NULL, *out = NULL, *profile = NULL;
  int cores = 0, jobs = 0, slurm = 0;
  struct cli c;
  cli_init(&c, "sgfabric sweep", argc, argv);
  cli_add_table(&c, sweep_options);
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    switch (id) {
    case CLI_ERROR: return CLI_USAGE;
    case CLI_HELP: usage(stdout); return 0;
    case CLI_POSITIONAL:
      if (study)
        return cli_unexpected(&c);
      study = c.value;
      break;
    case SWEEP_OPT_OUT: out = c.value; break;
    case SWEEP_OPT_CORES:
      if (cli_int(&c, 1, 65536, &cores) != 0)
        return CLI_USAGE;
      break;
    case SWEEP_OPT_JOBS:
      if (cli_int(&c, 1, 100000, &jobs) != 0)
        return CLI_USAGE;
      break;
    case SWEEP_OPT_SLURM: slurm = 1; break;
    case SWEEP_OPT_PROFILE: profile = c.value; break;
    }
  }
  if (study == NULL || out == NULL) {
    fprintf(stderr, "sgfabric sweep: %s is required; see sgfabric sweep --help\n",
            study == NULL ? "a STUDY file" : "--out DIR");
    return CLI_USAGE;
  }
  if (jobs && !slurm && !profile)
    return cli_usage_error(&c, "--jobs is for --slurm or --profile; on this machine, --cores N runs N points at once");

  /* The study: a readable regular file. Its content is checked below, before DIR is touched. */
  char study_path[PATH_MAX];
  struct stat st;
  if (stat(study, &st) != 0 || realpath(study, study_path) == NULL) {
    fprintf(stderr, "sgfabric sweep: %s: %s\n", study, strerror(errno));
    return CLI_FAILURE;
  }
  if (!S_ISREG(st.st_mode) || access(study_path, R_OK) != 0) {
    fprintf(stderr, "sgfabric sweep: %s: %s\n", study, S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
    return CLI_FAILURE;
  }

  /* DIR, by the rules of docs/outputs.md where they apply: never the current directory or one
   * holding it, never a file or a symbolic link, never a directory that holds anything but a
   * previous sweep. A previous sweep is resumed, not replaced: its finished points are the
   * results being extended. */
  char dir[PATH_MAX], cwd[PATH_MAX], real_cwd[PATH_MAX];
  size_t len = strlen(out);
  while (len > 1 && out[len - 1] == '/')
    len--;
  if (len + 64 >= sizeof dir)
    return cli_usage_error(&c, "--out: name too long");
  char given[PATH_MAX];
  memcpy(given, out, len);
  given[len] = '\0';
  int exists = 0;
  if (lstat(given, &st) == 0) {
    exists = 1;
    if (S_ISLNK(st.st_mode))
      return cli_usage_error(&c, "--out %s: is a symbolic link; not used (give a new directory)", given);
    if (!S_ISDIR(st.st_mode))
      return cli_usage_error(&c, "--out %s: exists and is not a directory; not replaced", given);
    if (realpath(given, dir) == NULL) {
      fprintf(stderr, "sgfabric sweep: --out %s: %s\n", given, strerror(errno));
      return CLI_FAILURE;
    }
    if (getcwd(cwd, sizeof cwd) != NULL && realpath(cwd, real_cwd) != NULL && is_inside(real_cwd, dir))
      return cli_usage_error(&c,
                             "--out %s: is the current directory or holds it; nothing was touched (give a new "
                             "directory)",
                             given);
    int sweep = is_sweep(dir);
    if (!sweep && !is_empty_dir(dir))
      return cli_usage_error(&c,
                             "--out %s: exists, is not empty and is not a sweep of sgfabric (no sweep.json with "
                             "\"format\": \"%s\"); nothing was touched. Give a new or empty directory",
                             given, SWEEP_FORMAT);
    /* The study may be the copy a sweep keeps (sgfabric sweep DIR/study.yaml --out DIR resumes
     * it), never another file of DIR: it would not be there for a later run to find. */
    char copy[PATH_MAX + 16];
    snprintf(copy, sizeof copy, "%s/study.yaml", dir);
    if (is_inside(study_path, dir) && strcmp(study_path, copy) != 0)
      return cli_usage_error(&c, "--out %s: holds the study %s; keep the study outside the sweep's directory", given,
                             study);
  } else if (errno == ENOENT) {
    char parent[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(given, '/'), *base = slash ? slash + 1 : given;
    if (slash == given)
      snprintf(parent, sizeof parent, "/");
    else
      snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - given) : 1, slash ? given : ".");
    if (realpath(parent, real) == NULL) {
      fprintf(stderr, "sgfabric sweep: --out %s: its parent directory %s %s\n", given, parent,
              errno == ENOENT ? "does not exist (it is not created)" : strerror(errno));
      return CLI_FAILURE;
    }
    if (!strcmp(base, ".") || !strcmp(base, ".."))
      return cli_usage_error(&c, "--out %s: not a directory name", given);
    if (snprintf(dir, sizeof dir, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base) >= (int)sizeof dir - 64)
      return cli_usage_error(&c, "--out %s: name too long", given);
  } else {
    fprintf(stderr, "sgfabric sweep: --out %s: %s\n", given, strerror(errno));
    return CLI_FAILURE;
  }

  /* Snakemake 7 runs each job through /bin/sh -c with the directory written by Python's repr():
   * in single quotes, unless the path holds a ' (then in double quotes, where the shell would
   * expand $(...) and backquotes). A ', a backslash (doubled by repr) or a control character
   * (escaped by repr) would change the path or run a command: refused, before anything. */
  for (const char *p = dir; *p; p++)
    if (*p == '\'' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
      return cli_usage_error(&c,
                             "--out %s: its path holds a %s, which Snakemake cannot pass safely to its jobs "
                             "(they run through /bin/sh); give a name without quotes, backslashes or control "
                             "characters",
                             given,
                             *p == '\''   ? "quote (')"
                             : *p == '\\' ? "backslash"
                                          : "control character");

  /* What the sweep runs: snakemake, python3 (the study check), this binary (every point). */
  char snakemake[PATH_MAX + 16];
  if (find_on_path("snakemake", snakemake, sizeof snakemake) != 0) {
    fprintf(stderr, "sgfabric sweep: snakemake is not installed (not found on PATH); install Debian's snakemake "
                    "package: apt-get install --no-install-recommends snakemake\n");
    return CLI_FAILURE;
  }
  char python[PATH_MAX + 16];
  /* Debian's interpreter first: python3-yaml and snakemake install there, whatever else is on PATH. */
  if (access("/usr/bin/python3", X_OK) == 0)
    snprintf(python, sizeof python, "/usr/bin/python3");
  else if (find_on_path("python3", python, sizeof python) != 0) {
    fprintf(stderr, "sgfabric sweep: python3 is not installed (apt-get install python3-yaml)\n");
    return CLI_FAILURE;
  }
  char self[PATH_MAX];
  ssize_t self_len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (self_len <= 0) {
    fprintf(stderr, "sgfabric sweep: cannot find the sgfabric executable\n");
    return CLI_FAILURE;
  }
  self[self_len] = '\0';
  char script[PATH_MAX], snakefile[PATH_MAX], analysis[PATH_MAX - 64];
  run_analysis_dir(analysis, sizeof analysis);
  snprintf(script, sizeof script, "%s/sweep/sweeplib.py", analysis);
  snprintf(snakefile, sizeof snakefile, "%s/sweep/Snakefile", analysis);
  if (access(script, R_OK) != 0 || access(snakefile, R_OK) != 0) {
    fprintf(stderr,
            "sgfabric sweep: the workflow %s is missing (neither installed next to sgfabric nor in the "
            "source tree %s)\n",
            snakefile, SGF_SOURCE_DIR);
    return CLI_FAILURE;
  }
  int rc = check_study(python, script, study, self); /* named as given, in its messages */
  if (rc != 0)
    return rc == 2 ? CLI_FAILURE : rc;

  /* Now DIR is written: created if new, then the study's copy and sweep.json. */
  if (!exists && mkdir(dir, 0777) != 0) {
    fprintf(stderr, "sgfabric sweep: --out %s: cannot create it: %s\n", given, strerror(errno));
    return CLI_FAILURE;
  }
  size_t study_len;
  char *study_text = read_small(study_path, &study_len);
  if (study_text == NULL) {
    fprintf(stderr, "sgfabric sweep: %s: cannot read it (at most 1 MiB)\n", study);
    return CLI_FAILURE;
  }
  if (write_if_changed(dir, "study.yaml", study_text, study_len) != 0) {
    free(study_text);
    return CLI_FAILURE;
  }
  free(study_text);
  static char json[4 * PATH_MAX + 512];
  snprintf(json, sizeof json, "{\n  \"format\": \"%s\",\n  \"study\": ", SWEEP_FORMAT);
  char study_copy[PATH_MAX + 16];
  snprintf(study_copy, sizeof study_copy, "%s/study.yaml", dir);
  append_json_string(json, sizeof json, study_copy);
  snprintf(json + strlen(json), sizeof json - strlen(json), ",\n  \"given_as\": ");
  append_json_string(json, sizeof json, study_path);
  snprintf(json + strlen(json), sizeof json - strlen(json), ",\n  \"sgfabric\": ");
  append_json_string(json, sizeof json, self);
  snprintf(json + strlen(json), sizeof json - strlen(json), ",\n  \"cwd\": ");
  append_json_string(json, sizeof json, getcwd(cwd, sizeof cwd) ? cwd : "/");
  snprintf(json + strlen(json), sizeof json - strlen(json),
           ",\n  \"sgfabric_version\": \"%s\",\n  \"simgrid_version\": \"%s\"\n}\n", SGF_VERSION, SGF_SIMGRID_VERSION);
  if (write_if_changed(dir, "sweep.json", json, strlen(json)) != 0)
    return CLI_FAILURE;

  /* Snakemake takes over this process (its exit status is the sweep's; Ctrl-C reaches it and the
   * points it runs, each of which then removes its temporary directory). */
  char config[PATH_MAX + 16], cores_text[16], jobs_text[16];
  snprintf(config, sizeof config, "%s/sweep.json", dir);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(cores_text, sizeof cores_text, "%d", cores ? cores : online > 0 ? (int)online : 1);
  snprintf(jobs_text, sizeof jobs_text, "%d", jobs ? jobs : 64);
  char *sargv[SWEEP_MAX_ARGS];
  int n = 0;
  sargv[n++] = snakemake;
  sargv[n++] = "--snakefile";
  sargv[n++] = snakefile;
  sargv[n++] = "--directory";
  sargv[n++] = dir;
  sargv[n++] = "--configfile";
  sargv[n++] = config;
  sargv[n++] = "--cores"; /* local jobs: every point without a cluster, the table and figures with one */
  sargv[n++] = cores_text;
  sargv[n++] = "--keep-going";       /* one failed point does not stop the others */
  sargv[n++] = "--rerun-incomplete"; /* a point Snakemake saw interrupted is run again */
  /* A point is identified by its directory name, which hashes everything it runs: only a missing
   * point is run, not one whose rule code changed with an update of the workflow (Snakemake's
   * default also reruns on code and parameter changes). */
  sargv[n++] = "--rerun-triggers";
  sargv[n++] = "mtime";
  char profile_path[PATH_MAX];
  if (profile) {
    /* A profile given as a directory is made absolute (Snakemake looks up a bare name in its
     * configuration directories); its status script is then found from any directory. */
    if (stat(profile, &st) == 0 && S_ISDIR(st.st_mode) && realpath(profile, profile_path) != NULL)
      profile = profile_path;
    sargv[n++] = "--profile";
    sargv[n++] = (char *)profile;
  }
  if (slurm)
    sargv[n++] = "--slurm";
  if (jobs || (slurm && !profile)) {
    sargv[n++] = "--jobs";
    sargv[n++] = jobs_text;
  }
  sargv[n] = NULL;
  fflush(NULL);
  execv(snakemake, sargv);
  fprintf(stderr, "sgfabric sweep: cannot run %s: %s\n", snakemake, strerror(errno));
  return CLI_FAILURE;
}
