/* JSON strings and numbers (RFC 8259 sections 6, 7 and 8.1). */
#include "json_out.h"

#include <math.h>

/* Length of the valid UTF-8 sequence starting at s, or 0 if it is not one (RFC 3629 section 4:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static int utf8_sequence_length(const unsigned char *s)
{
  unsigned char c = s[0];
  if (c >= 0xC2 && c <= 0xDF)
    return (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

void json_write_string_or_null(FILE *out, const char *s)
{
  if (s == NULL)
    fputs("null", out);
  else
    json_write_string(out, s);
}

void json_write_string(FILE *out, const char *text)
{
  const unsigned char *s = (const unsigned char *)(text ? text : "");
  fputc('"', out);
  while (*s) {
    unsigned char c = *s;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      s++;
    } else if (c < 0x20 || c == 0x7F) {
      fprintf(out, "\\u%04x", c);
      s++;
    } else if (c < 0x80) {
      fputc(c, out);
      s++;
    } else {
      int len = utf8_sequence_length(s); /* stops at the NUL: continuation bytes are never 0 */
      if (len == 0) {
        fputs("\\ufffd", out);
        s++;
      } else {
        fwrite(s, 1, (size_t)len, out);
        s += len;
      }
    }
  }
  fputc('"', out);
}

const char *json_number_text(char *buf, double value)
{
  if (!isfinite(value))
    snprintf(buf, JSON_NUMBER_LEN, "null");
  else
    snprintf(buf, JSON_NUMBER_LEN, "%.17g", value);
  return buf;
}

void json_write_number(FILE *out, double value)
{
  char buf[JSON_NUMBER_LEN];
  fputs(json_number_text(buf, value), out);
}
