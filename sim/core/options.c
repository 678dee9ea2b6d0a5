/* options.c: options of one value given once (options.h). */
#include "ema/core/options.h"

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
