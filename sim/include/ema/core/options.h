/* options.h: what the command lines of ema-sim and ema-validate share: options of one value,
 * each given once (GOption keeps the last of an option given twice and drops the others unsaid,
 * so each is parsed as an array and a repeat is a usage error naming it), and the rule that puts
 * the program's name before an error message only where the message has no place of its own
 * (ema_message_located). */
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

/* Whether MESSAGE starts with its place, PLACE: (PLACE before its first ": "), as an error in a
 * file does: SOURCE:LINE or SOURCE:LINE:COL (a file's, --set's, <stdin>'s), or a file or folder
 * that exists, named as a path (with a / or a .: a bare name, a variant's or a tenant's, is not
 * taken for the folder of that name that the working directory may hold). Else the message is
 * the program's, and "PROGRAM: " goes first (the GNU convention; a file it cannot find is named
 * after it, as in "ema-sim: x.yaml: cannot open"). Both programs print their errors of exit
 * status 1 by this rule; usage errors always start with the program's name. */
gboolean ema_message_located(const char *message);

/* g_prefix_error's LABEL (FORMAT, ending in ": ", e.g. "tenant %s: ") put into *ERROR's message
 * after the place it starts with, where it starts with one (ema_message_located: "PATH:LINE:COL",
 * or a path that exists): "t.csv:3:1: tenant b: TIMESTAMP: ...", not "tenant b: t.csv:3:1: ...",
 * so that the message leads with where it is, as every other located error does, for editors and
 * tools to jump to, and ema-sim puts no "ema-sim: " before it. A message without a place gets
 * the label first, as g_prefix_error does. Nothing where ERROR or *ERROR is NULL. */
void ema_message_prefix_error(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* ARG as one word of a shell command line that a program prints or records for a person to run
 * again: as it is where it holds only letters, digits and -_./=:,%+; with a control character in
 * the shell's $'...' quotes, the characters as C escapes (the line stays one line); else in
 * single quotes. Newly allocated. */
char *ema_shell_word(const char *arg);

G_END_DECLS
