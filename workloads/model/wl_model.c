/* Built-in models, model description files, parameter and FLOP counts. */
#include "wl_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text_input.h"

/* Sources: GPT-3 175B from Brown et al. 2020 table 2.1 with Megatron's padded vocabulary
 * 51,200 (Narayanan et al. 2021); Llama 3 from Dubey et al. 2024 table 3 (vocabulary
 * 128,256, 8K training context); Mixtral from Jiang et al. 2024 table 1 (32K context; we
 * default to 4K training sequences, a modelling choice). GPT-3 ties the output layer to the
 * input embedding (Radford et al. 2019; Megatron-LM's default, --untie-embeddings-and-output-weights
 * unties), Llama 3 and Mixtral do not (their released checkpoints have a separate lm_head). */
static const struct wl_model presets[] = {
  { "gpt3-175b", 96, 12288, 96, 96, 49152, 51200, 2048, 0, 0, 0, 1 },
  { "llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, 0, 0, 1, 0 },
  { "llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, 0, 0, 1, 0 },
  { "llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, 0, 0, 1, 0 },
  { "mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, 8, 2, 1, 0 },
};
static const char *const preset_names[] = {
  "gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", NULL
};

const char *const *wl_model_preset_names(void) { return preset_names; }

int wl_model_preset(const char *name, struct wl_model *m)
{
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcasecmp(presets[i].name, name) == 0) {
      *m = presets[i];
      return 0;
    }
  return -1;
}

/* Splits "key value", "key: value" or "key = value" (docs/workload-format.md, custom models)
 * into key and value; returns 0, 1 for a blank line, -1 if it is none of these. */
static int split_key_value(char *line, char **key, char **value)
{
  char *hash = strchr(line, '#');
  if (hash != NULL)
    *hash = '\0';
  char *p = line + strspn(line, " \t");
  if (*p == '\0')
    return 1;
  *key = p;
  p += strcspn(p, " \t:=");
  char *key_end = p;
  p += strspn(p, " \t");
  if (*p == ':' || *p == '=')
    p++;
  p += strspn(p, " \t");
  *key_end = '\0';
  if (*p == '\0' || **key == '\0')
    return -1;
  *value = p;
  size_t len = strcspn(p, " \t");
  if (p[len + strspn(p + len, " \t")] != '\0')
    return -1; /* a second word after the value */
  p[len] = '\0';
  return 0;
}

int wl_model_read(FILE *in, const char *path, struct wl_model *m, char *err, size_t errlen)
{
  struct {
    const char *key;
    int *v;
  } keys[] = { { "layers", &m->layers },
               { "hidden", &m->hidden },
               { "heads", &m->heads },
               { "kv-heads", &m->kv_heads },
               { "ffn", &m->ffn },
               { "vocab", &m->vocab },
               { "seq", &m->seq },
               { "experts", &m->experts },
               { "top-k", &m->topk },
               { "gated", &m->gated_mlp },
               { "tied-embeddings", &m->tied_embeddings } };
  const int nkeys = sizeof keys / sizeof keys[0];
  memset(m, 0, sizeof *m);
  m->gated_mlp = 1;
  m->kv_heads = -1;
  snprintf(m->name, sizeof m->name, "custom");
  struct text_input ti;
  text_input_init(&ti, in, path, 510);
  char *line;
  int lineno = 0, rc = 0, got;
  while (rc == 0 && (got = text_input_line(&ti, &line, NULL, err, errlen)) != 0) {
    if (got < 0) {
      rc = -1;
      break;
    }
    lineno = ti.line;
    char *key = NULL, *val = NULL;
    int split = split_key_value(line, &key, &val);
    if (split > 0)
      continue;
    if (split < 0) {
      snprintf(err, errlen, "%s:%d: expected 'key value' (or 'key: value')", path, lineno);
      rc = -1;
      break;
    }
    if (strcmp(key, "name") == 0) {
      snprintf(m->name, sizeof m->name, "%.63s", val);
      continue;
    }
    int k = 0;
    while (k < nkeys && strcmp(keys[k].key, key) != 0)
      k++;
    long long v = 0;
    if (k == nkeys) {
      snprintf(err, errlen, "%s:%d: unknown key '%.63s'", path, lineno, key);
      rc = -1;
    } else if (text_parse_index(val, 1LL << 30, &v) != 0) {
      snprintf(err, errlen, "%s:%d: %s: '%.63s' is not a non-negative integer (at most %d)", path, lineno, key, val,
               1 << 30);
      rc = -1;
    } else if (strcmp(key, "layers") == 0 && v > WL_MAX_LAYERS) {
      snprintf(err, errlen, "%s:%d: layers: %lld is more than the limit of %d layers", path, lineno, v, WL_MAX_LAYERS);
      rc = -1;
    } else {
      *keys[k].v = (int)v;
    }
  }
  text_input_free(&ti);
  if (rc != 0)
    return -1;
  if (m->kv_heads < 0)
    m->kv_heads = m->heads;
  const char *missing = m->layers < 1   ? "layers"
                        : m->hidden < 1 ? "hidden"
                        : m->heads < 1  ? "heads"
                        : m->ffn < 1    ? "ffn"
                        : m->vocab < 1  ? "vocab"
                        : m->seq < 1    ? "seq"
                                        : NULL;
  if (missing != NULL) {
    snprintf(err, errlen, "%s:%d: '%s' missing or zero", path, lineno, missing);
    return -1;
  }
  if (m->tied_embeddings > 1) {
    snprintf(err, errlen, "%s:%d: tied-embeddings=%d must be 0 or 1", path, lineno, m->tied_embeddings);
    return -1;
  }
  if (m->experts > 0 && (m->topk < 1 || m->topk > m->experts)) {
    snprintf(err, errlen, "%s:%d: top-k=%d must be in 1..experts=%d", path, lineno, m->topk, m->experts);
    return -1;
  }
  return 0;
}

int wl_model_load_file(const char *path, struct wl_model *m, char *err, size_t errlen)
{
  FILE *f = text_input_open(path, "model file", err, errlen);
  if (f == NULL)
    return -1;
  int rc = wl_model_read(f, path, m, err, errlen);
  fclose(f);
  return rc;
}

void wl_model_layer_params(const struct wl_model *m, struct wl_layer_params *p)
{
  double h = m->hidden, hd = (double)m->hidden / m->heads, kv = m->kv_heads * hd;
  double mlp = (m->gated_mlp ? 3.0 : 2.0) * h * m->ffn;
  p->attn = h * (h + 2 * kv) + h * h;
  p->mlp = m->experts > 0 ? 0 : mlp;
  p->expert = m->experts > 0 ? mlp : 0;
  p->router = m->experts > 0 ? h * m->experts : 0;
  p->norms = 2 * h;
}

double wl_model_params_total(const struct wl_model *m)
{
  struct wl_layer_params p;
  wl_model_layer_params(m, &p);
  double layer = p.attn + p.mlp + p.expert * m->experts + p.router + p.norms;
  return m->layers * layer + (m->tied_embeddings ? 1.0 : 2.0) * m->vocab * m->hidden + m->hidden;
}

double wl_model_layer_fwd_flops_per_token(const struct wl_model *m, int seq)
{
  struct wl_layer_params p;
  wl_model_layer_params(m, &p);
  double matmul = p.attn + p.mlp + p.expert * m->topk + p.router;
  /* 2 FLOPs per multiply-add; attention scores and values: 2*2*seq*(heads*head_dim). */
  return 2.0 * matmul + 4.0 * seq * (double)m->hidden;
}

static double forward_flops(const struct wl_model *m, long global_batch, int seq, int with_logits)
{
  double tokens = (double)global_batch * seq;
  double logits = with_logits ? 2.0 * m->hidden * (double)m->vocab : 0;
  return tokens * (m->layers * wl_model_layer_fwd_flops_per_token(m, seq) + logits);
}

double wl_model_flops_per_iteration(const struct wl_model *m, long global_batch, int seq)
{
  return 3.0 * forward_flops(m, global_batch, seq, 1);
}

double wl_hardware_flops_per_iteration(const struct wl_model *m, long global_batch, int seq, int recompute)
{
  double f = wl_model_flops_per_iteration(m, global_batch, seq);
  /* Full recomputation re-runs every layer's forward but not the output layer, which is
   * why Megatron's hardware formula has V/(16lh) where the model formula has V/(12lh).
   * Selective recomputation re-runs the attention core only (Korthikanti et al. 2022, section
   * 4.2): the 4*s*h FLOPs per token and layer of QK^T and attention-over-V. */
  if (recompute == WL_RECOMPUTE_FULL)
    return f + forward_flops(m, global_batch, seq, 0);
  if (recompute == WL_RECOMPUTE_SELECTIVE)
    return f + (double)global_batch * seq * m->layers * 4.0 * seq * m->hidden;
  return f;
}

static const char *const recompute_names[] = { "none", "full", "selective" };

const char *wl_recompute_name(int recompute)
{
  return recompute >= 0 && recompute <= 2 ? recompute_names[recompute] : NULL;
}

int wl_recompute_parse(const char *name)
{
  for (int i = 0; i <= 2; i++)
    if (strcmp(recompute_names[i], name) == 0)
      return i;
  return -1;
}

double wl_flops_utilization(double flops, double iteration_s, int gpus, double peak_flops)
{
  if (iteration_s <= 0 || gpus <= 0 || peak_flops <= 0)
    return 0;
  return flops / (iteration_s * gpus * peak_flops);
}
