/* options.h: the command lines' options of one value (ema-sim's and
 * ema-validate's), each given once: GOption keeps the last of an option
 * given twice and drops the others unsaid, so each is parsed as an array
 * and a repeat is a usage error naming it. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The one value of OPTION ("-o", "--model") in VALUES, as GOption collected it (NULL where not
 * given) into *VALUE (NULL where not given); FALSE with ERROR (G_OPTION_ERROR_BAD_VALUE)
 * "OPTION is given N times (A, B): give it once" where it was given more than once, WHY (may
 * be NULL) after it in brackets. */
gboolean ema_option_once(const char *option, char **values, const char *why, const char **value,
                         GError **error);

/* ENTRIES (NULL-terminated) added to CONTEXT and *ARGC, *ARGV parsed: every option of one value
 * (a string or a file name; numbers are to be read as text by their command, so an entry of
 * G_OPTION_ARG_INT, _INT64 or _DOUBLE is a programming error) is parsed as an array and must be
 * given once (ema_option_once, the option named -X where it has a short name, else --NAME);
 * its value goes to its entry's variable (a new string, NULL where not given). FALSE with
 * GOption's or ema_option_once's error. */
gboolean ema_options_parse(GOptionContext *context, const GOptionEntry *entries, int *argc,
                           char ***argv, GError **error);

G_END_DECLS
