/* options.c: options of one value given once, and where an error message has its place
 * (options.h). */
#include "ema/core/options.h"

#include <stdarg.h>
#include <string.h>

gboolean ema_option_once(const char *option, char **values, const char *why, const char **value,
                         GError **error) {
  g_autofree char *given = NULL;
  *value = values ? values[0] : NULL;
  if (values == NULL || values[0] == NULL || values[1] == NULL)
    return TRUE;
  given = g_strjoinv(", ", values);
  g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
              "%s is given %u times (%s): give it once%s%s%s", option, g_strv_length(values), given,
              why ? " (" : "", why ? why : "", why ? ")" : "");
  return FALSE;
}

gboolean ema_options_parse(GOptionContext *context, const GOptionEntry *entries, int *argc,
                           char ***argv, GError **error) {
  g_autofree GOptionEntry *parsed = NULL;
  g_autofree GStrv *values = NULL;
  guint n = 0;
  gboolean ok;
  while (entries[n].long_name)
    n++;
  parsed = g_new0(GOptionEntry, n + 1);
  values = g_new0(GStrv, n);
  for (guint i = 0; i < n; i++) {
    parsed[i] = entries[i];
    g_assert(entries[i].arg != G_OPTION_ARG_INT && entries[i].arg != G_OPTION_ARG_INT64 &&
             entries[i].arg != G_OPTION_ARG_DOUBLE);
    if (entries[i].arg == G_OPTION_ARG_STRING || entries[i].arg == G_OPTION_ARG_FILENAME) {
      parsed[i].arg = entries[i].arg == G_OPTION_ARG_STRING ? G_OPTION_ARG_STRING_ARRAY
                                                            : G_OPTION_ARG_FILENAME_ARRAY;
      parsed[i].arg_data = &values[i];
    }
  }
  g_option_context_add_main_entries(context, parsed, NULL);
  ok = g_option_context_parse(context, argc, argv, error);
  for (guint i = 0; i < n; i++) {
    const char *value;
    if (ok && parsed[i].arg_data == &values[i]) {
      g_autofree char *option = entries[i].short_name
                                    ? g_strdup_printf("-%c", entries[i].short_name)
                                    : g_strconcat("--", entries[i].long_name, NULL);
      ok = ema_option_once(option, values[i], NULL, &value, error);
      if (ok && value)
        *(char **) entries[i].arg_data = g_strdup(value);
    }
    g_strfreev(values[i]);
  }
  return ok;
}

gboolean ema_message_located(const char *message) {
  const char *end = strstr(message, ": ");
  g_autofree char *place = end ? g_strndup(message, (gsize) (end - message)) : NULL;
  return place && *place &&
         (g_regex_match_simple("^.+:[0-9]+(:[0-9]+)?$", place, G_REGEX_DOTALL, 0) ||
          (strpbrk(place, "/.") && g_file_test(place, G_FILE_TEST_EXISTS)));
}

/* ARG in the shell's $'...' quotes, its control characters as C escapes. */
static char *escape_quoted(const char *arg) {
  GString *out = g_string_new("$'");
  for (const char *c = arg; *c != '\0'; c++) {
    if (*c == '\'' || *c == '\\')
      g_string_append_printf(out, "\\%c", *c);
    else if (*c == '\n')
      g_string_append(out, "\\n");
    else if (*c == '\t')
      g_string_append(out, "\\t");
    else if ((guchar) *c < 0x20 || *c == 0x7f)
      g_string_append_printf(out, "\\x%02x", (guint) (guchar) *c);
    else
      g_string_append_c(out, *c);
  }
  g_string_append_c(out, '\'');
  return g_string_free(out, FALSE);
}

char *ema_shell_word(const char *arg) {
  gboolean plain = arg[0] != '\0' && strspn(arg, "abcdefghijklmnopqrstuvwxyz"
                                                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                 "0123456789-_./=:,%+") == strlen(arg);
  gboolean control = FALSE;
  for (const char *c = arg; *c != '\0'; c++)
    control = control || (guchar) *c < 0x20 || *c == 0x7f;
  return plain ? g_strdup(arg) : control ? escape_quoted(arg) : g_shell_quote(arg);
}

void ema_message_prefix_error(GError **error, const char *format, ...) {
  va_list args;
  const char *message, *end;
  char *label, *labelled;
  if (error == NULL || *error == NULL)
    return;
  va_start(args, format);
  label = g_strdup_vprintf(format, args);
  va_end(args);
  message = (*error)->message;
  end = ema_message_located(message) ? strstr(message, ": ") : NULL;
  labelled = end ? g_strdup_printf("%.*s: %s%s", (int) (end - message), message, label, end + 2)
                 : g_strconcat(label, message, NULL);
  g_free(label);
  g_free((*error)->message);
  (*error)->message = labelled;
}
