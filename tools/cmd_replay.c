/* sgfabric replay: re-runs a result directory's command from its manifest.json into a new
 * directory and says whether the new summary.json (each fabric's, for compare) is byte-identical
 * to the recorded one: the check that a result is reproducible from what it records.
 *
 * Each input the manifest names is looked for where the command found it (relative to the
 * recorded working directory), then in DIR (compare keeps its inputs there) and DIR's parent (a
 * compare's runs name inputs relative to the comparison directory); it must have the recorded
 * SHA-256. The command line is replayed with those paths and --out NEW. */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "sgf_version.h"
#include "sha256.h"

#define MAX_WORDS 512
#define MAX_INPUTS 16
#define MAX_FABRICS 8

struct manifest {
  char *command[MAX_WORDS];
  int n_command;
  char *cwd;
  struct {
    char *path, *sha256, *given_as;
  } inputs[MAX_INPUTS];
  int n_inputs;
  char *fabrics[MAX_FABRICS];
  int n_fabrics;
  char *version;
};

static void usage(FILE *out)
{
  fprintf(out, "usage: sgfabric replay DIR [--out NEW]\n\n"
               "Re-runs the command that wrote the results directory DIR (sgfabric run, flows or compare)\n"
               "from DIR/manifest.json, with the same inputs (checked by SHA-256) and seed, into NEW\n"
               "(default DIR.replay), and compares the summaries: exit 0 when summary.json (each fabric's,\n"
               "for compare) is byte-identical, 1 when not (the first differing key is printed) or when the\n"
               "replay cannot run, 2 on a usage error.\n");
}

static char *read_text(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *bigger = realloc(buf, cap *= 2);
      if (bigger == NULL) {
        free(buf);
        buf = NULL;
      } else
        buf = bigger;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (buf == NULL || failed) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

static void skip_space(const char **p)
{
  while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')
    (*p)++;
}

/* Parses the JSON string at *p (escapes \" \\ \/ \n \t \uXXXX below 0x80) into a new string. */
static char *parse_string(const char **p)
{
  skip_space(p);
  if (**p != '"')
    return NULL;
  (*p)++;
  size_t cap = 64, n = 0;
  char *out = malloc(cap);
  while (out && **p && **p != '"') {
    char c = *(*p)++;
    if (c == '\\') {
      char e = *(*p)++;
      if (e == 'n')
        c = '\n';
      else if (e == 't')
        c = '\t';
      else if (e == 'u') {
        unsigned v = 0;
        if (sscanf(*p, "%4x", &v) != 1 || v >= 0x80) {
          free(out);
          return NULL;
        }
        *p += 4;
        c = (char)v;
      } else if (e == '"' || e == '\\' || e == '/')
        c = e;
      else {
        free(out);
        return NULL;
      }
    }
    if (n + 2 > cap) {
      char *bigger = realloc(out, cap *= 2);
      if (bigger == NULL) {
        free(out);
        return NULL;
      }
      out = bigger;
    }
    out[n++] = c;
  }
  if (out == NULL || **p != '"') {
    free(out);
    return NULL;
  }
  (*p)++;
  out[n] = '\0';
  return out;
}

/* The position just after "key": at the top level of the manifest, or NULL. */
static const char *member(const char *text, const char *key)
{
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\n  \"%s\":", key);
  const char *p = strstr(text, pattern);
  return p ? p + strlen(pattern) : NULL;
}

static int parse_string_array(const char *p, char **out, int max, int *n)
{
  skip_space(&p);
  if (*p++ != '[')
    return -1;
  *n = 0;
  skip_space(&p);
  while (*p != ']') {
    if (*n == max)
      return -1;
    if ((out[(*n)++] = parse_string(&p)) == NULL)
      return -1;
    skip_space(&p);
    if (*p == ',')
      p++;
    else if (*p != ']')
      return -1;
    skip_space(&p);
  }
  return 0;
}

static void manifest_free(struct manifest *m)
{
  for (int i = 0; i < m->n_command; i++)
    free(m->command[i]);
  for (int i = 0; i < m->n_inputs; i++) {
    free(m->inputs[i].path);
    free(m->inputs[i].sha256);
    free(m->inputs[i].given_as);
  }
  for (int i = 0; i < m->n_fabrics; i++)
    free(m->fabrics[i]);
  free(m->cwd);
  free(m->version);
}

static int manifest_read(const char *path, struct manifest *m, char *err, size_t errlen)
{
  memset(m, 0, sizeof *m);
  char *text = read_text(path);
  if (text == NULL) {
    snprintf(err, errlen, "%s: cannot read: %s (is the directory a result of sgfabric run, flows or compare?)", path,
             strerror(errno));
    return -1;
  }
  int rc = -1;
  const char *p = member(text, "command");
  if (p == NULL || parse_string_array(p, m->command, MAX_WORDS, &m->n_command) != 0 || m->n_command == 0) {
    snprintf(err, errlen, "%s: no readable \"command\" array", path);
    goto out;
  }
  if ((p = member(text, "cwd")) != NULL)
    m->cwd = parse_string(&p);
  if ((p = member(text, "sgfabric_version")) != NULL)
    m->version = parse_string(&p);
  if ((p = member(text, "fabrics")) != NULL && parse_string_array(p, m->fabrics, MAX_FABRICS, &m->n_fabrics) != 0) {
    snprintf(err, errlen, "%s: unreadable \"fabrics\"", path);
    goto out;
  }
  if ((p = member(text, "inputs")) == NULL) {
    snprintf(err, errlen, "%s: no \"inputs\"", path);
    goto out;
  }
  skip_space(&p);
  if (*p++ != '{')
    goto bad_inputs;
  skip_space(&p);
  while (*p == '"') {
    if (m->n_inputs == MAX_INPUTS)
      goto bad_inputs;
    char *name = parse_string(&p);
    m->inputs[m->n_inputs].path = name;
    m->n_inputs++;
    skip_space(&p);
    if (name == NULL || *p++ != ':')
      goto bad_inputs;
    skip_space(&p);
    if (*p++ != '{')
      goto bad_inputs;
    for (;;) {
      skip_space(&p);
      char *key = parse_string(&p);
      skip_space(&p);
      if (key == NULL || *p++ != ':') {
        free(key);
        goto bad_inputs;
      }
      char *value = parse_string(&p);
      if (value == NULL) {
        free(key);
        goto bad_inputs;
      }
      if (!strcmp(key, "sha256") && m->inputs[m->n_inputs - 1].sha256 == NULL)
        m->inputs[m->n_inputs - 1].sha256 = value;
      else if (!strcmp(key, "given_as") && m->inputs[m->n_inputs - 1].given_as == NULL)
        m->inputs[m->n_inputs - 1].given_as = value;
      else
        free(value);
      free(key);
      skip_space(&p);
      if (*p == ',') {
        p++;
        continue;
      }
      if (*p++ != '}')
        goto bad_inputs;
      break;
    }
    if (m->inputs[m->n_inputs - 1].sha256 == NULL)
      goto bad_inputs;
    skip_space(&p);
    if (*p == ',')
      p++;
    skip_space(&p);
  }
  if (*p != '}')
    goto bad_inputs;
  rc = 0;
  goto out;
bad_inputs:
  snprintf(err, errlen, "%s: unreadable \"inputs\"", path);
out:
  free(text);
  return rc;
}

/* Finds input k of m with its recorded SHA-256: the absolute path in found. 0 or -1. */
static int resolve_input(const struct manifest *m, int k, const char *dir, char *found, size_t len, char *err,
                         size_t errlen)
{
  const char *path = m->inputs[k].path;
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", dir);
  char *slash = strrchr(parent, '/');
  if (slash == NULL)
    snprintf(parent, sizeof parent, ".");
  else if (slash == parent)
    parent[1] = '\0';
  else
    *slash = '\0';
  const char *bases[3] = { m->cwd, dir, parent };
  int seen_changed = 0;
  for (int b = 0; b < (path[0] == '/' ? 1 : 3); b++) {
    char candidate[PATH_MAX], hex[65];
    if (path[0] == '/')
      snprintf(candidate, sizeof candidate, "%s", path);
    else if (bases[b] == NULL || bases[b][0] == '\0')
      continue;
    else if (snprintf(candidate, sizeof candidate, "%s/%s", bases[b], path) >= (int)sizeof candidate)
      continue;
    if (access(candidate, R_OK) != 0)
      continue;
    if (sha256_file(candidate, hex) != 0)
      continue;
    if (strcmp(hex, m->inputs[k].sha256) != 0) {
      seen_changed = 1;
      continue;
    }
    if (realpath(candidate, found) == NULL)
      snprintf(found, len, "%s", candidate);
    return 0;
  }
  snprintf(err, errlen, "input %s %s (recorded SHA-256 %s)", path,
           seen_changed ? "has changed since the run" : "is not found where the run read it, in DIR or next to DIR",
           m->inputs[k].sha256);
  return -1;
}

/* The key path ("counters.ecn_marks", "collectives[2].time_s") of the value at offset in a JSON
 * text: a small scanner over strings, objects and arrays. */
static void key_path_at(const char *text, size_t offset, char *buf, size_t len)
{
  struct frame {
    int is_array, index, expect_key;
    char key[64];
  } stack[32];
  int depth = 0;
  char current[64];
  size_t n = 0;
  int in_string = 0, collecting = 0;
  for (size_t i = 0; i < offset && text[i]; i++) {
    char c = text[i];
    if (in_string) {
      if (c == '\\' && text[i + 1]) {
        i++;
        continue;
      }
      if (c == '"') {
        in_string = 0;
        if (collecting) {
          current[n < sizeof current ? n : sizeof current - 1] = '\0';
          snprintf(stack[depth - 1].key, sizeof stack[depth - 1].key, "%s", current);
        }
      } else if (collecting && n + 1 < sizeof current)
        current[n++] = c;
      continue;
    }
    switch (c) {
    case '"':
      in_string = 1;
      collecting = depth > 0 && !stack[depth - 1].is_array && stack[depth - 1].expect_key;
      n = 0;
      break;
    case '{':
    case '[':
      if (depth < 32)
        stack[depth++] = (struct frame){ c == '[', 0, c == '{', "" };
      break;
    case '}':
    case ']':
      if (depth > 0)
        depth--;
      break;
    case ':':
      if (depth > 0)
        stack[depth - 1].expect_key = 0;
      break;
    case ',':
      if (depth > 0) {
        if (stack[depth - 1].is_array)
          stack[depth - 1].index++;
        else
          stack[depth - 1].expect_key = 1;
      }
      break;
    default: break;
    }
  }
  buf[0] = '\0';
  for (int d = 0; d < depth; d++) {
    size_t used = strlen(buf);
    if (stack[d].is_array)
      snprintf(buf + used, len - used, "[%d]", stack[d].index);
    else
      snprintf(buf + used, len - used, "%s%s", used ? "." : "", stack[d].key);
  }
  if (buf[0] == '\0')
    snprintf(buf, len, "(top level)");
}

/* The line of text around offset, for showing a difference. */
static void line_at(const char *text, size_t offset, char *buf, size_t len)
{
  size_t start = offset, end = offset;
  while (start > 0 && text[start - 1] != '\n')
    start--;
  while (text[end] && text[end] != '\n')
    end++;
  while (text[start] == ' ')
    start++;
  size_t n = end - start;
  if (n > 100)
    n = 100;
  snprintf(buf, len, "%.*s", (int)n, text + start);
}

/* Compares two summary.json files: 0 identical, 1 different (said on stdout), -1 unreadable. */
static int compare_summaries(const char *old_path, const char *new_path, const char *name)
{
  char *a = read_text(old_path), *b = read_text(new_path);
  int rc;
  if (a == NULL || b == NULL) {
    fprintf(stderr, "sgfabric replay: cannot read %s\n", a == NULL ? old_path : new_path);
    rc = -1;
  } else if (strcmp(a, b) == 0) {
    printf("identical: %s\n", name);
    rc = 0;
  } else {
    size_t i = 0;
    while (a[i] && a[i] == b[i])
      i++;
    /* Back to the start of the differing value, so that the key is the one it belongs to. */
    while (i > 0 && (a[i - 1] != ':' && a[i - 1] != ',' && a[i - 1] != '[' && a[i - 1] != '{' && a[i - 1] != '\n'))
      i--;
    char key[512], was[128], now[128];
    key_path_at(a, i, key, sizeof key);
    line_at(a, i, was, sizeof was);
    line_at(b, i, now, sizeof now);
    printf("differs: %s, first at key %s\n  recorded: %s\n  replayed: %s\n", name, key, was, now);
    rc = 1;
  }
  free(a);
  free(b);
  return rc;
}

static int same_directory(const char *a, const char *b)
{
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int cmd_replay(int argc, char **argv)
{
  const char *dir_arg = NULL, *out_arg = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if ((!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) && i + 1 < argc)
      out_arg = argv[++i];
    else if (!strncmp(argv[i], "--out=", 6))
      out_arg = argv[i] + 6;
    else if (argv[i][0] != '-' && dir_arg == NULL)
      dir_arg = argv[i];
    else {
      fprintf(stderr, "sgfabric replay: unexpected argument '%s' (see sgfabric replay --help)\n", argv[i]);
      return 2;
    }
  }
  if (dir_arg == NULL) {
    fprintf(stderr, "sgfabric replay: which results directory? (see sgfabric replay --help)\n");
    return 2;
  }
  char dir[PATH_MAX], out[PATH_MAX + 16], err[PATH_MAX + 512], path[PATH_MAX + 64];
  if (realpath(dir_arg, dir) == NULL) {
    fprintf(stderr, "sgfabric replay: %s: %s\n", dir_arg, strerror(errno));
    return 1;
  }
  if (out_arg == NULL)
    snprintf(out, sizeof out, "%s.replay", dir);
  else if (out_arg[0] == '/')
    snprintf(out, sizeof out, "%s", out_arg);
  else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) {
      fprintf(stderr, "sgfabric replay: cannot get the working directory: %s\n", strerror(errno));
      return 1;
    }
    snprintf(out, sizeof out, "%.*s/%s", PATH_MAX / 2, cwd, out_arg);
  }
  if (same_directory(dir, out)) {
    fprintf(stderr, "sgfabric replay: --out %s is the directory being replayed; give another one\n", out);
    return 2;
  }
  struct manifest m;
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  if (manifest_read(path, &m, err, sizeof err) != 0) {
    fprintf(stderr, "sgfabric replay: %s\n", err);
    manifest_free(&m);
    return 1;
  }
  int rc = 1;
  const char *kind = m.command[0];
  if (strcmp(kind, "run") && strcmp(kind, "flows") && strcmp(kind, "compare")) {
    fprintf(stderr, "sgfabric replay: %s: the command '%s' is not one that replays (run, flows, compare)\n", path,
            kind);
    goto done;
  }
  if (m.version && strcmp(m.version, SGF_VERSION) != 0)
    fprintf(stderr, "sgfabric replay: note: %s was written by sgfabric %s, this is %s\n", dir_arg, m.version,
            SGF_VERSION);

  /* The command line, with the inputs where they are now and --out NEW. */
  static char resolved[MAX_INPUTS][PATH_MAX];
  char *args[MAX_WORDS + 4];
  static char rewritten[MAX_WORDS][2 * PATH_MAX + 80];
  int n = 0;
  args[n++] = "sgfabric";
  for (int i = 0; i < m.n_command; i++)
    args[n++] = m.command[i];
  for (int k = 0; k < m.n_inputs; k++) {
    if (resolve_input(&m, k, dir, resolved[k], sizeof resolved[k], err, sizeof err) != 0) {
      fprintf(stderr, "sgfabric replay: %s\n", err);
      goto done;
    }
    const char *as = m.inputs[k].given_as ? m.inputs[k].given_as : m.inputs[k].path;
    for (int i = 2; i < n; i++) {
      const char *a = args[i], *eq = NULL;
      if (a[0] == '-' && (eq = strchr(a, '=')) != NULL && !strcmp(eq + 1, as))
        snprintf(rewritten[i], sizeof rewritten[i], "%.*s=%.4095s", (int)(eq - a), a, resolved[k]);
      else if (!strncmp(a, "simai:", 6) && !strcmp(a + 6, as))
        snprintf(rewritten[i], sizeof rewritten[i], "simai:%.4095s", resolved[k]);
      else if (!strcmp(a, as) && i > 1 && args[i - 1][0] == '-')
        snprintf(rewritten[i], sizeof rewritten[i], "%.4095s", resolved[k]);
      else
        continue;
      args[i] = rewritten[i];
    }
  }
  int has_out = 0;
  for (int i = 2; i < n; i++) {
    if ((!strcmp(args[i], "--out") || !strcmp(args[i], "-o")) && i + 1 < n) {
      args[++i] = out;
      has_out = 1;
    } else if (!strncmp(args[i], "--out=", 6)) {
      snprintf(rewritten[i], sizeof rewritten[i], "--out=%s", out);
      args[i] = rewritten[i];
      has_out = 1;
    }
  }
  if (!has_out) {
    args[n++] = "--out";
    args[n++] = out;
  }
  args[n] = NULL;

  fprintf(stderr, "sgfabric replay: re-running %s:", dir_arg);
  for (int i = 0; i < n; i++)
    fprintf(stderr, " %s", args[i]);
  fprintf(stderr, "\n");
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, "sgfabric replay: cannot find the sgfabric executable\n");
    goto done;
  }
  self[len] = '\0';
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "sgfabric replay: cannot start the replay: %s\n", strerror(errno));
    goto done;
  }
  if (pid == 0) {
    /* The replayed command's own output goes to stderr: stdout is the verdict. */
    if (dup2(2, 1) < 0)
      _exit(127);
    execv(self, args);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "sgfabric replay: lost the replay: %s\n", strerror(errno));
      goto done;
    }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "sgfabric replay: the replayed command failed (%s %d)\n",
            WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    goto done;
  }

  int differ = 0, failed = 0;
  int parts = strcmp(kind, "compare") == 0 ? m.n_fabrics : 1;
  for (int f = 0; f < parts; f++) {
    char old_path[PATH_MAX + 128], new_path[PATH_MAX + 160], name[128];
    if (strcmp(kind, "compare") == 0)
      snprintf(name, sizeof name, "%s/summary.json", m.fabrics[f]);
    else
      snprintf(name, sizeof name, "summary.json");
    snprintf(old_path, sizeof old_path, "%s/%s", dir, name);
    snprintf(new_path, sizeof new_path, "%s/%s", out, name);
    int c = compare_summaries(old_path, new_path, name);
    differ |= c == 1;
    failed |= c < 0;
  }
  /* compare generates its platform (unless given) and its workload again: they must be the same. */
  for (int k = 0; strcmp(kind, "compare") == 0 && k < m.n_inputs; k++) {
    char again[PATH_MAX + 64], hex[65];
    if (m.inputs[k].path[0] == '/' ||
        snprintf(again, sizeof again, "%s/%s", out, m.inputs[k].path) >= (int)sizeof again)
      continue;
    if (sha256_file(again, hex) != 0) {
      printf("differs: %s is missing from the replay\n", m.inputs[k].path);
      differ = 1;
    } else if (strcmp(hex, m.inputs[k].sha256) != 0) {
      printf("differs: %s was generated differently (SHA-256 %s, recorded %s)\n", m.inputs[k].path, hex,
             m.inputs[k].sha256);
      differ = 1;
    } else
      printf("identical: %s\n", m.inputs[k].path);
  }
  if (parts == 0) {
    fprintf(stderr, "sgfabric replay: %s lists no fabrics to compare\n", path);
    failed = 1;
  }
  if (!failed)
    printf("replay of %s into %s: %s\n", dir_arg, out, differ ? "summary.json DIFFERS" : "summary.json byte-identical");
  rc = failed || differ ? 1 : 0;
done:
  manifest_free(&m);
  return rc;
}
