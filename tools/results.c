/* Results directories: the replace rule, atomic commit, interrupted runs, the manifest. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "results.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_out.h"
#include "sgf_version.h"
#include "sha256.h"

/* The results the signal handler cleans up (one per process: each command writes one DIR),
 * NULL before results_begin and after commit or abort. */
static struct results *volatile g_active;
static volatile sig_atomic_t g_signal;
static enum results_signals g_mode = RESULTS_SIGNALS_EXIT;
static volatile pid_t g_children[RESULTS_MAX_CHILDREN];

/* ---- paths ------------------------------------------------------------------------------- */

/* Whether path is base or inside it (both absolute and canonical). */
static int is_inside(const char *path, const char *base)
{
  size_t n = strlen(base);
  return strncmp(path, base, n) == 0 && (path[n] == '\0' || path[n] == '/' || (n == 1 && base[0] == '/'));
}

/* Reads at most 1 MiB of dir/manifest.json (not through a symbolic link); NULL if absent. */
static char *read_manifest(const char *dir)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_t cap = 1 << 20, n = 0;
    text = malloc(cap + 1);
    ssize_t got;
    while (text && n < cap && (got = read(fd, text + n, cap - n)) > 0)
      n += (size_t)got;
    if (text)
      text[n] = '\0';
  }
  close(fd);
  return text;
}

static int has_marker(const char *manifest)
{
  return manifest && strstr(manifest, "\"format\": \"sgfabric-results/") != NULL;
}

/* Whether dir is a result of sgfabric: its manifest.json carries the format marker. */
static int is_result(const char *dir)
{
  char *m = read_manifest(dir);
  int yes = has_marker(m);
  free(m);
  return yes;
}

/* A name results_register accepts: one path component (a trailing '/' marks a directory),
 * printable, nothing JSON would need to escape. */
static int valid_entry(const char *name)
{
  size_t n = strlen(name);
  if (n == 0 || n >= RESULTS_MAX_NAME)
    return 0;
  if (name[n - 1] == '/')
    n--;
  if (n == 0 || (n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] < 0x20 || name[i] == '/' || name[i] == '"' || name[i] == '\\')
      return 0;
  return name[n] == '\0' || name[n + 1] == '\0';
}

/* Removes name (relative to parent_fd) and, if it is a directory, everything in it, without
 * following symbolic links. Only for the temporary directory: all of it was written by us. */
static int remove_tree_at(int parent_fd, const char *name, int depth)
{
  int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (depth > 8 || remove_tree_at(fd, e->d_name, depth + 1)))
      rc = -1;
  closedir(d);
  if (unlinkat(parent_fd, name, AT_REMOVEDIR) != 0)
    rc = -1;
  return rc;
}

/* Deletes what an old result recognises as its own, the entries its manifest lists (regular
 * files, and sub-results the same way), then the directory if nothing else is left. Returns 0
 * when dir is gone, -1 when it still holds something that is not sgfabric's. */
static int remove_old_result(const char *dir, int depth)
{
  char *m = read_manifest(dir);
  const char *p = has_marker(m) ? strstr(m, "\"files\": [") : NULL;
  char path[4400];
  if (p) {
    p += strlen("\"files\": [");
    for (;;) {
      while (*p == ' ' || *p == ',' || *p == '\n')
        p++;
      if (*p != '"')
        break;
      const char *end = strchr(p + 1, '"');
      if (end == NULL || end - p - 1 >= RESULTS_MAX_NAME)
        break;
      char name[RESULTS_MAX_NAME];
      memcpy(name, p + 1, (size_t)(end - p - 1));
      name[end - p - 1] = '\0';
      p = end + 1;
      if (!valid_entry(name) || !strcmp(name, "manifest.json"))
        continue;
      size_t n = strlen(name);
      int is_dir = name[n - 1] == '/';
      name[n - is_dir] = '\0';
      snprintf(path, sizeof path, "%s/%s", dir, name);
      struct stat st;
      if (lstat(path, &st) != 0)
        continue;
      if (is_dir && S_ISDIR(st.st_mode) && depth < 4)
        remove_old_result(path, depth + 1);
      else if (!is_dir && S_ISREG(st.st_mode))
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    unlink(path);
  }
  free(m);
  return rmdir(dir) == 0 ? 0 : -1;
}

/* ---- begin ------------------------------------------------------------------------------- */

static void block_signals(sigset_t *old)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, old);
}

static void at_exit_cleanup(void)
{
  if (g_active)
    results_abort(g_active);
}

int results_begin(struct results *r, const char *command, const char *dir, int force, const char *const *inputs,
                  int n_inputs, char *err, size_t errlen)
{
  memset(r, 0, sizeof *r);
  r->tmp_fd = -1;
  r->force = force;
  snprintf(r->command, sizeof r->command, "%s", command);
  snprintf(r->interrupt_line, sizeof r->interrupt_line, "%s: interrupted, nothing written\n", command);
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  if (len == 0 || len + 32 >= sizeof r->dir) {
    snprintf(err, errlen, "--out: invalid directory name '%s'", dir);
    return RESULTS_REFUSED;
  }
  memcpy(r->dir, dir, len);
  r->dir[len] = '\0';

  struct stat st;
  if (lstat(r->dir, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      snprintf(err, errlen, "--out %s: is a symbolic link; not replaced (give a new directory)", r->dir);
      return RESULTS_REFUSED;
    }
    if (!S_ISDIR(st.st_mode)) {
      snprintf(err, errlen, "--out %s: exists and is not a directory; not replaced", r->dir);
      return RESULTS_REFUSED;
    }
    if (realpath(r->dir, r->path) == NULL) {
      snprintf(err, errlen, "--out %s: %s", r->dir, strerror(errno));
      return 1;
    }
    char cwd[PATH_MAX], real[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) != NULL && realpath(cwd, real) != NULL && is_inside(real, r->path)) {
      snprintf(err, errlen,
               "--out %s: is the current directory or holds it; nothing was touched (give a new directory)", r->dir);
      return RESULTS_REFUSED;
    }
    for (int i = 0; i < n_inputs; i++)
      if (inputs[i] && realpath(inputs[i], real) != NULL && is_inside(real, r->path)) {
        snprintf(err, errlen,
                 "--out %s: holds the input %s; results never replace the directory of an input, nothing was "
                 "touched (give a new directory)",
                 r->dir, inputs[i]);
        return RESULTS_REFUSED;
      }
    /* A mount point cannot be renamed: say so now, not after the simulation. */
    char parent[4200];
    struct stat pst;
    snprintf(parent, sizeof parent, "%s/..", r->path);
    if (stat(parent, &pst) == 0 && pst.st_dev != st.st_dev) {
      snprintf(err, errlen, "--out %s: is a mount point, which cannot be replaced; give a directory inside it", r->dir);
      return RESULTS_REFUSED;
    }
    if (!force && !is_result(r->path)) {
      snprintf(err, errlen,
               "--out %s: exists and is not a result of sgfabric (no manifest.json with \"format\": \"%s\"); nothing "
               "was touched. Give a new directory, or --force to replace it (its files are then kept in %s.old-*)",
               r->dir, RESULTS_FORMAT, r->dir);
      return RESULTS_REFUSED;
    }
  } else if (errno == ENOENT) {
    /* A new directory: its parent must exist (it is not created). */
    char parent[4096], real[PATH_MAX];
    const char *slash = strrchr(r->dir, '/'), *base = slash ? slash + 1 : r->dir;
    if (slash == r->dir)
      snprintf(parent, sizeof parent, "/");
    else
      snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - r->dir) : 1, slash ? r->dir : ".");
    if (realpath(parent, real) == NULL) {
      snprintf(err, errlen, "--out %s: its parent directory %s %s", r->dir, parent,
               errno == ENOENT ? "does not exist (it is not created)" : strerror(errno));
      return 1;
    }
    if (snprintf(r->path, sizeof r->path, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base) >= (int)sizeof r->path) {
      snprintf(err, errlen, "--out %s: name too long", r->dir);
      return RESULTS_REFUSED;
    }
  } else {
    snprintf(err, errlen, "--out %s: %s", r->dir, strerror(errno));
    return 1;
  }

  /* The temporary directory, now: an unwritable parent, a read-only or full file system is
   * reported before anything is simulated. Signals are held while it is created and
   * registered, so that the handler never misses it. */
  sigset_t old;
  block_signals(&old);
  snprintf(r->tmp, sizeof r->tmp, "%s.tmp-XXXXXX", r->path);
  int rc = 0;
  if (mkdtemp(r->tmp) == NULL) {
    snprintf(err, errlen, "--out %s: cannot create a directory next to it: %s", r->dir, strerror(errno));
    r->tmp[0] = '\0';
    rc = 1;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    chmod(r->tmp, 0777 & ~mask); /* mkdtemp makes it 0700; a results directory is an ordinary one */
    r->tmp_fd = open(r->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    static int registered;
    if (!registered)
      registered = atexit(at_exit_cleanup) == 0;
    g_active = r;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* ---- signals ----------------------------------------------------------------------------- */

/* Async-signal-safe only: unlinkat, rmdir, write, kill, signal, raise, _exit. */
static void on_signal(int sig)
{
  struct results *r = g_active;
  if (g_mode == RESULTS_SIGNALS_FLAG && sig != SIGABRT) {
    g_signal = sig;
    for (int i = 0; i < RESULTS_MAX_CHILDREN; i++)
      if (g_children[i] > 0)
        kill(g_children[i], SIGTERM);
    return;
  }
  if (r != NULL) {
    for (int i = 0; i < r->n_entries; i++) {
      const char *name = r->entries[i];
      size_t n = strlen(name);
      unlinkat(r->tmp_fd, name, n && name[n - 1] == '/' ? AT_REMOVEDIR : 0);
    }
    rmdir(r->tmp);
  }
  if (sig == SIGABRT || r == NULL) {
    /* A crash stays a crash; with nothing to clean up, the signal does what it always did. */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  ssize_t ignored = write(2, r->interrupt_line, strlen(r->interrupt_line));
  (void)ignored;
  _exit(128 + sig);
}

void results_catch_signals(enum results_signals mode)
{
  static const int caught[] = { SIGINT, SIGTERM, SIGHUP };
  /* A signal ignored when sgfabric started stays ignored (nohup ignores SIGHUP; a background
   * job of a non-interactive shell, SIGINT), also after SimGrid has set its SIGINT handler. */
  static int known, ignored[3];
  g_mode = mode;
  struct sigaction sa, ignore;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  sa.sa_flags = 0; /* no SA_RESTART: compare's waitpid returns EINTR */
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int i = 0; i < 3; i++) {
    if (!known) {
      struct sigaction now;
      ignored[i] = sigaction(caught[i], NULL, &now) == 0 && now.sa_handler == SIG_IGN;
    }
    sigaction(caught[i], ignored[i] ? &ignore : &sa, NULL);
  }
  known = 1;
  sigaction(SIGABRT, &sa, NULL);
}

int results_interrupted(void) { return g_signal; }

int results_interrupted_exit(struct results *r)
{
  results_abort(r);
  fputs(r->interrupt_line, stderr);
  return 128 + (g_signal ? g_signal : SIGINT);
}

void results_add_child(pid_t pid)
{
  for (int i = 0; i < RESULTS_MAX_CHILDREN; i++)
    if (g_children[i] <= 0) {
      g_children[i] = pid;
      return;
    }
}

void results_remove_child(pid_t pid)
{
  for (int i = 0; i < RESULTS_MAX_CHILDREN; i++)
    if (g_children[i] == pid)
      g_children[i] = 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

int results_register(struct results *r, const char *name)
{
  if (!valid_entry(name))
    return -1;
  for (int i = 0; i < r->n_entries; i++)
    if (!strcmp(r->entries[i], name))
      return 0;
  if (r->n_entries == RESULTS_MAX_ENTRIES)
    return -1;
  snprintf(r->entries[r->n_entries], RESULTS_MAX_NAME, "%s", name);
  r->n_entries = r->n_entries + 1; /* after the name: the handler reads only whole names */
  return 0;
}

FILE *results_open(struct results *r, const char *name)
{
  if (results_register(r, name) != 0)
    return NULL;
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", r->tmp, name);
  return fopen(path, "w");
}

int results_close(FILE *f)
{
  if (f == NULL)
    return -1;
  int failed = ferror(f);
  if (fclose(f) != 0)
    failed = 1;
  return failed ? -1 : 0;
}

int results_commit(struct results *r, char *err, size_t errlen)
{
  /* No signal between moving the old result aside and putting the new one in place. */
  sigset_t old;
  block_signals(&old);
  char aside[4200] = "";
  int rc = 0;
  struct stat st;
  /* DIR may have appeared, or changed, since results_begin checked it. */
  if (lstat(r->path, &st) == 0) {
    const char *why = S_ISLNK(st.st_mode)                ? "is a symbolic link"
                      : !S_ISDIR(st.st_mode)             ? "is not a directory"
                      : !r->force && !is_result(r->path) ? "is not a result of sgfabric"
                                                         : NULL;
    if (why) {
      snprintf(err, errlen, "--out %s: %s now (it changed during the run); not replaced, nothing written", r->dir, why);
      rc = RESULTS_REFUSED;
      goto fail;
    }
    snprintf(aside, sizeof aside, "%s.old-XXXXXX", r->path);
    /* An empty directory of a fresh name, which the old result then replaces. */
    if (mkdtemp(aside) == NULL || rename(r->path, aside) != 0) {
      snprintf(err, errlen, "--out %s: cannot move the previous result aside: %s", r->dir, strerror(errno));
      if (aside[0] && aside[strlen(aside) - 1] != 'X')
        rmdir(aside);
      rc = 1;
      goto fail;
    }
  } else if (errno != ENOENT) {
    snprintf(err, errlen, "--out %s: %s", r->dir, strerror(errno));
    rc = 1;
    goto fail;
  }
  if (rename(r->tmp, r->path) != 0) {
    snprintf(err, errlen, "--out %s: cannot move the results into place: %s", r->dir, strerror(errno));
    if (aside[0])
      rename(aside, r->path); /* the previous result back where it was */
    rc = 1;
    goto fail;
  }
  g_active = NULL;
  if (r->tmp_fd >= 0)
    close(r->tmp_fd);
  r->tmp_fd = -1;
  r->tmp[0] = '\0';
  if (aside[0] && remove_old_result(aside, 0) != 0)
    fprintf(stderr, "%s: warning: %s held files that are not sgfabric's; they are kept in %s%s\n", r->command, r->dir,
            r->dir, aside + strlen(r->path));
  sigprocmask(SIG_SETMASK, &old, NULL);
  return 0;
fail:
  results_abort(r);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void results_abort(struct results *r)
{
  if (g_active == r)
    g_active = NULL;
  if (r->tmp_fd >= 0)
    close(r->tmp_fd);
  r->tmp_fd = -1;
  if (r->tmp[0])
    remove_tree_at(AT_FDCWD, r->tmp, 0);
  r->tmp[0] = '\0';
}

int results_write_manifest(struct results *r, int argc, char **argv, const char *const *inputs, int n_inputs,
                           uint64_t seed)
{
  struct manifest_desc d = { .argc = argc, .argv = argv, .inputs = inputs, .n_inputs = n_inputs, .seed = seed };
  return results_write_manifest_desc(r, &d);
}

int results_write_manifest_desc(struct results *r, const struct manifest_desc *d)
{
  FILE *f = results_open(r, "manifest.json");
  if (f == NULL)
    return -1;
  fprintf(f, "{\n  \"format\": \"%s\",\n  \"command\": [", RESULTS_FORMAT);
  for (int i = 0; i < d->argc; i++) {
    json_write_string(f, d->argv[i]);
    fprintf(f, "%s", i + 1 < d->argc ? ", " : "");
  }
  char cwd[4096];
  fprintf(f, "],\n  \"cwd\": ");
  json_write_string(f, getcwd(cwd, sizeof cwd) ? cwd : "");
  fprintf(f, ",\n  \"inputs\": {");
  int rc = 0, first = 1;
  for (int i = 0; i < d->n_inputs; i++) {
    char hex[65], path[8400];
    if (d->inputs[i] == NULL)
      continue;
    if (d->base && d->inputs[i][0] != '/')
      snprintf(path, sizeof path, "%s/%s", d->base, d->inputs[i]);
    else
      snprintf(path, sizeof path, "%s", d->inputs[i]);
    if (sha256_file(path, hex) != 0) {
      rc = -1;
      continue;
    }
    fprintf(f, "%s\n    ", first ? "" : ",");
    first = 0;
    json_write_string(f, d->inputs[i]);
    fprintf(f, ": {\"sha256\": \"%s\"", hex);
    if (d->given_as && d->given_as[i]) {
      fprintf(f, ", \"given_as\": ");
      json_write_string(f, d->given_as[i]);
    }
    fprintf(f, "}");
  }
  fprintf(f, "\n  },\n  \"seed\": %llu,\n", (unsigned long long)d->seed);
  if (d->extra_json)
    fprintf(f, "  %s,\n", d->extra_json);
  /* The entries of this directory that a later run replacing it may delete: nothing else. */
  fprintf(f, "  \"files\": [");
  for (int i = 0; i < r->n_entries; i++) {
    fprintf(f, "%s", i ? ", " : "");
    json_write_string(f, r->entries[i]);
  }
  fprintf(f, "],\n");
  fprintf(f, "  \"sgfabric_version\": \"%s\",\n  \"simgrid_version\": \"%s\"\n}\n", SGF_VERSION, SGF_SIMGRID_VERSION);
  if (results_close(f) != 0)
    rc = -1;
  return rc;
}

int results_copy_file(const char *src, const char *dst)
{
  FILE *in = fopen(src, "rb");
  if (in == NULL)
    return -1;
  FILE *out = fopen(dst, "wb");
  if (out == NULL) {
    fclose(in);
    return -1;
  }
  char buf[65536];
  size_t n;
  int failed = 0;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    failed |= fwrite(buf, 1, n, out) != n;
  failed |= ferror(in) != 0;
  fclose(in);
  failed |= fclose(out) != 0;
  return failed ? -1 : 0;
}
