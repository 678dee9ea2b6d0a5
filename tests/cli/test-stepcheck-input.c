/* test-stepcheck-input.c: `ema-sim compare-steps` and `ema-sim compare-static` on damaged or
 * odd input, through the ema-sim program. A row that no GPU of the server could have run, a
 * cell the step model would leave out or misread, a measured time past the simulator's clock, a
 * column named twice: each an error at its file:line:col with exit status 1 and no table, never
 * a plausible table of something else. The rows are timed on h200x8-hgx, whose profile is in
 * the tree (no shared data needed). */
#include <string.h>

#include "testutil.h"

static const char steps_header[] =
    "model,tp,phase,batch,context,chunk,prior_context,time_us,std_us,repeats\n";
static const char perf_header[] = "model,hardware,prompt_size,batch_size,token_size,prompt_time,"
                                  "token_time,tensor_parallel\n";

/* ema-sim COMMAND PATH [ARG] on PATH holding TEXT fails with exit status 1, nothing on stdout
 * and one line on stderr: PATH, then WANT. */
static void assert_refused(const char *command, const char *path, const char *text, const char *arg,
                           const char *want) {
  g_autofree char *line = g_strconcat(path, want, "\n", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli(command, path, arg, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, line);
  g_assert_cmpstr(run->out, ==, "");
}

/* compare-steps on PATH holding the header and ROW refused with WANT after the path. */
static void assert_steps_refused(const char *path, const char *header, const char *row,
                                 const char *want) {
  g_autofree char *text = g_strconcat(header, row, "\n", NULL);
  assert_refused("compare-steps", path, text, NULL, want);
}

/* compare-static on PATH holding the header and ROW refused with WANT after the path. */
static void assert_static_refused(const char *path, const char *row, const char *want) {
  g_autofree char *text = g_strconcat(perf_header, row, "\n", NULL);
  assert_refused("compare-static", path, text, NULL, want);
}

/* A tensor-parallel size past 2^32 (a whole number of at most 2^53 to the reader) is refused as
 * any size the server's GPUs do not divide: it was cut to 32 bits and the row timed at TP 1 (or
 * 2), the table showing TP 1 of compare-steps, and TP 4294967298 of compare-static beside the
 * times of TP 2. */
static void test_tp_past_32_bits(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,4294967297,decode,8,1000,1,0,100,1,5",
                       ":2:14: tensor-parallel size 4294967297 must divide the server's 8 GPUs");
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,512,1,128,196,54,4294967298",
                        ":2:41: tensor-parallel size 4294967298 must divide the server's 8 GPUs");
  ema_test_remove_tree(dir);
}

/* std_us or repeats named twice in steps.csv's header is an error at the second: both were taken
 * for no such column, and their cells went unchecked. */
static void test_steps_optional_column_twice(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "steps.csv", NULL);
  assert_refused("compare-steps", path,
                 "model,tp,phase,batch,context,chunk,prior_context,time_us,std_us,repeats,std_us\n"
                 "llama-3.1-8b,1,decode,8,1000,1,0,100,1,5,-1\n",
                 NULL, ":1:73: column 'std_us' is in the header twice (also at column 58)");
  assert_refused("compare-steps", path,
                 "repeats,model,tp,phase,batch,context,chunk,prior_context,time_us,repeats\n"
                 "0,llama-3.1-8b,1,decode,8,1000,1,0,100,5\n",
                 NULL, ":1:66: column 'repeats' is in the header twice (also at column 1)");
  ema_test_remove_tree(dir);
}

/* The columns of the other phase than a row's hold what the capture writes there (a prefill
 * row's batch 1 and context 0, a decode row's chunk 1 and prior_context 0; or 0): a number the
 * step would leave out is an error at its cell, not a step of one sequence timed for a prefill
 * of 8 (the table showing batch 0), nor a decode step timed without the chunk beside it; a word
 * there is an error as in the row's own columns. Rows as the captures write them (and with 0s)
 * still compare. */
static void test_steps_other_phase_columns(void) {
  static const struct {
    const char *row, *want;
  } cases[] = {
      {"llama-3.1-8b,1,prefill,8,0,512,0,100,1,5",
       ":2:24: column 'batch': '8' where a prefill row times one sequence's chunk: 0 or 1"},
      {"llama-3.1-8b,1,prefill,1,4096,512,0,100,1,5",
       ":2:26: column 'context': '4096' where a prefill row has no decoding sequence: 0 (its "
       "chunk's cached tokens are prior_context)"},
      {"llama-3.1-8b,1,prefill,hello,0,512,0,100,1,5",
       ":2:24: column 'batch': 'hello' is not a non-negative integer (of at most 2^53)"},
      {"llama-3.1-8b,1,decode,8,1000,512,0,100,1,5",
       ":2:30: column 'chunk': '512' where a decode row's sequences add one token each: 0 or 1; "
       "decodes beside a prefill chunk are phase mixed"},
      {"llama-3.1-8b,1,decode,8,1000,1,1024,100,1,5",
       ":2:32: column 'prior_context': '1024' where a decode row has no prefill chunk: 0; "
       "decodes beside a prefill chunk are phase mixed"},
      {"llama-3.1-8b,1,decode,8,1000,1,-5,100,1,5",
       ":2:32: column 'prior_context': '-5' is not a non-negative integer (of at most 2^53)"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "steps.csv", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path,
                                    "model,tp,phase,batch,context,chunk,prior_context,time_us\n"
                                    "llama-3.1-8b,1,decode,8,1000,1,0,100\n"
                                    "llama-3.1-8b,1,prefill,1,0,512,1024,100\n"
                                    "llama-3.1-8b,1,decode,8,1000,0,0,100\n"
                                    "llama-3.1-8b,1,prefill,0,0,512,1024,100\n",
                                    -1, NULL));
  run = ema_test_cli("compare-steps", path, NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "\nllama-3.1-8b,1,prefill,0,0,512,1024,100.000,");
  ema_test_assert_contains(run->out, "over 4 rows\n");
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_steps_refused(path, steps_header, cases[i].row, cases[i].want);
  ema_test_remove_tree(dir);
}

/* A step whose KV cache no GPU of the server has room for after the weights is an error at its
 * row (its first column: the tokens come from several cells), as weights that leave no room are:
 * 10^6 sequences of 10^6 tokens were timed at 8 hours a step (against 100 us measured), 10^5
 * static batches of 9,216 tokens each at 2.5 years. */
static void test_kv_room(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,decode,1000000,999999,1,0,100,1,5",
                       ":2:1: the step holds 1000000000000 tokens in its KV cache, more than "
                       "llama-3.1-8b at tp 1 has room for on H200-SXM (1022709 tokens: 140 GiB of "
                       "HBM per GPU after 15.0 GiB of weights)");
  /* a mixed step just past it: 64 sequences of 16,385 tokens and a chunk of 1,024 */
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,mixed,64,16384,1024,0,100,1,5",
                       ":2:1: the step holds 1049664 tokens in its KV cache, more than "
                       "llama-3.1-8b at tp 1 has room for on H200-SXM (1022709 tokens: 140 GiB of "
                       "HBM per GPU after 15.0 GiB of weights)");
  /* the last decode step: 1,000 sequences of 8,192 prompt tokens and 1,023 more */
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,8192,1000,1024,196,54,8",
                        ":2:1: the step holds 9215000 tokens in its KV cache, more than "
                        "llama-2-70b at tp 8 has room for on H200-SXM (3243773 tokens: 140 GiB of "
                        "HBM per GPU after 16.1 GiB of weights)");
  ema_test_remove_tree(dir);
}

/* A measured time below 1 ns or of 2^63 ns or more is an error at its cell: 1e-300 us made an
 * error of 10^302 % (300 digits in the table and the summary, "0.000" measured), 1e300 a
 * measured cell of 301 digits. */
static void test_measured_time(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,decode,8,1000,1,0,1e-300,1,5",
                       ":2:34: column 'time_us': '1e-300' is below 1 ns (0.001), the simulator's "
                       "clock tick");
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,decode,8,1000,1,0,1e300,1,5",
                       ":2:34: column 'time_us': '1e300' is 2^63 ns (9.22337e+15) or more, past "
                       "what the simulator's clock counts (about 292 years)");
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,512,1,128,0.0000001,54,2",
                        ":2:34: column 'prompt_time': '0.0000001' is below 1 ns (1e-06), the "
                        "simulator's clock tick");
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,512,1,128,196,1e300,2",
                        ":2:38: column 'token_time': '1e300' is 2^63 ns (9.22337e+12) or more, "
                        "past what the simulator's clock counts (about 292 years)");
  ema_test_remove_tree(dir);
}

/* compare-static's table holds a row's hardware and model as one CSV field each: a hardware
 * label with a comma or a quote (any label, under --server) made a row of 14 fields, or a bare
 * quote. */
static void test_static_names_quoted(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  g_autofree char *table = g_build_filename(dir, "table.csv", NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(perf,
                                    "model,hardware,prompt_size,batch_size,token_size,prompt_time,"
                                    "token_time,tensor_parallel\n"
                                    "llama-2-70b,\"lab 1, rack 2\",512,1,128,196,54,2\n"
                                    "llama-2-70b,\"the \"\"fast\"\" one\",512,1,128,196,54,2\n",
                                    -1, NULL));
  run = ema_test_cli("compare-static", perf, "--server", "h200x8-hgx", "-o", table, NULL);
  ema_test_assert_ok(run);
  g_assert_true(g_file_get_contents(table, &text, NULL, NULL));
  lines = g_strsplit(text, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 4); /* the header, two rows, "" after the last */
  g_assert_true(g_str_has_prefix(lines[1], "\"lab 1, rack 2\",h200x8-hgx,2,512,1,128,196.000,"));
  g_assert_true(g_str_has_suffix(lines[1], ",llama-2-70b"));
  g_assert_true(g_str_has_prefix(lines[2], "\"the \"\"fast\"\" one\",h200x8-hgx,2,512,1,128,"));
  ema_test_remove_tree(dir);
}

/* compare-static reads a row whole before it skips it for its model or hardware: a damaged cell
 * of a row of bloom-176b (no such LLM here) or of h100-80gb-pcap (no server) is an error at the
 * cell, where it was counted among the rows skipped for their model or hardware; an empty model
 * or hardware is an error at it (it was skipped as "1 of  (unknown model)"). */
static void test_static_row_read_whole(void) {
  static const struct {
    const char *row, *want;
  } cases[] = {
      {"bloom-176b,a100-80gb,hello,1,128,196,54,8",
       ":2:22: column 'prompt_size': 'hello' is not a positive integer (of at most 2^53)"},
      {"llama2-70b,h100-80gb-pcap,512,1,1,196,54,2",
       ":2:33: column 'token_size': '1' leaves no decode step to time (the prompt's step makes "
       "the first token): at least 2"},
      {",a100-80gb,512,1,128,196,54,2", ":2:1: column 'model' is empty"},
      {"llama2-70b,\"\",512,1,128,196,54,2", ":2:12: column 'hardware' is empty"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_static_refused(perf, cases[i].row, cases[i].want);
  ema_test_remove_tree(dir);
}

/* A number cell is a decimal: hexadecimal, which strtod reads (a tp of 0x1 was a tp of 1, a
 * time of +0x64 was 100 us), also after a sign, is an error at its cell in the reader's words. */
static void test_decimal_only(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,0x1,decode,8,1000,1,0,100,1,5",
                       ":2:14: column 'tp': '0x1' is not a positive integer (of at most 2^53)");
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,decode,8,1000,1,0,+0x64,1,5",
                       ":2:34: column 'time_us': '+0x64' is not a positive number");
  assert_steps_refused(steps, steps_header, "llama-3.1-8b,1,decode,0X8,1000,1,0,100,1,5",
                       ":2:23: column 'batch': '0X8' is not a positive integer (of at most 2^53)");
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,512,0x1,128,196,54,2",
                        ":2:28: column 'batch_size': '0x1' is not a positive integer (of at most "
                        "2^53)");
  assert_static_refused(perf, "llama-2-70b,h200x8-hgx,512,1,128,196,54,-0x2",
                        ":2:41: column 'tensor_parallel': '-0x2' is not a positive integer (of "
                        "at most 2^53)");
  ema_test_remove_tree(dir);
}

/* A bad cell of any length is quoted by its first 40 bytes and "...": a cell of 10 MB made an
 * error line of 10 MB. */
static void test_long_cell(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  g_autofree char *digits = g_strnfill(10 << 20, '7');
  g_autofree char *word = g_strnfill(10 << 20, 'z');
  g_autofree char *row = g_strconcat("llama-3.1-8b,", digits, "x,decode,8,1000,1,0,100,1,5", NULL);
  g_autofree char *phase = g_strconcat("llama-3.1-8b,1,", word, ",8,1000,1,0,100,1,5", NULL);
  g_autofree char *time =
      g_strconcat("llama-3.1-8b,1,decode,8,1000,1,0,0.0000", digits, ",1,5", NULL);
  g_autofree char *hardware =
      g_strconcat("llama-2-70b,h200x8-hgx,512,1,1", digits, ",196,54,2", NULL);
  assert_steps_refused(steps, steps_header, row,
                       ":2:14: column 'tp': '7777777777777777777777777777777777777777...' is not "
                       "a positive integer (of at most 2^53)");
  assert_steps_refused(steps, steps_header, phase,
                       ":2:16: column 'phase': 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...' is "
                       "not decode, prefill or mixed");
  assert_steps_refused(steps, steps_header, time,
                       ":2:34: column 'time_us': '0.00007777777777777777777777777777777777...' is "
                       "below 1 ns (0.001), the simulator's clock tick");
  assert_static_refused(perf, hardware,
                        ":2:30: column 'token_size': '1777777777777777777777777777777777777777...' "
                        "is not a positive integer (of at most 2^53)");
  ema_test_remove_tree(dir);
}

/* compare-steps --summary's markdown table escapes a | in a model's name (an LLM file of that
 * name on EMA_LLM_PATH), where it split the row into one column more. */
static void test_summary_names_escaped(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *llm_dir = g_build_filename(dir, "llms", NULL);
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *model = NULL, *path = NULL;
  g_autofree char *source =
      g_build_filename(g_getenv("EMA_SOURCE_ROOT"), "hwmodels", "llms", "llama-3.1-8b.yaml", NULL);
  g_autofree char *edit = g_strconcat("EMA_LLM_PATH=", llm_dir, NULL);
  const char *edits[] = {edit, NULL};
  g_autofree char *text =
      g_strconcat(steps_header, "my|llama,1,decode,8,1000,1,0,5000,1,5\n", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_get_contents(source, &model, NULL, NULL));
  g_assert_cmpint(g_mkdir_with_parents(llm_dir, 0755), ==, 0);
  {
    /* Llama-3.1-8B's file, its name: line "my|llama" (a file's name: is its file's name) */
    GString *edited = g_string_new(NULL);
    g_auto(GStrv) lines = g_strsplit(model, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      g_string_append_printf(edited, "%s%s", i ? "\n" : "",
                             g_str_has_prefix(lines[i], "name:") ? "name: \"my|llama\"" : lines[i]);
    path = g_build_filename(llm_dir, "my|llama.yaml", NULL);
    g_assert_true(g_file_set_contents(path, edited->str, -1, NULL));
    g_string_free(edited, TRUE);
  }
  g_assert_true(g_file_set_contents(steps, text, -1, NULL));
  run = ema_test_cli_env(edits, "compare-steps", steps, "--summary", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "\n| my\\|llama | decode | 1 | ");
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/stepcheck-input/tp-past-32-bits", test_tp_past_32_bits);
  g_test_add_func("/stepcheck-input/decimal-only", test_decimal_only);
  g_test_add_func("/stepcheck-input/long-cell", test_long_cell);
  g_test_add_func("/stepcheck-input/steps/optional-column-twice", test_steps_optional_column_twice);
  g_test_add_func("/stepcheck-input/steps/other-phase-columns", test_steps_other_phase_columns);
  g_test_add_func("/stepcheck-input/kv-room", test_kv_room);
  g_test_add_func("/stepcheck-input/measured-time", test_measured_time);
  g_test_add_func("/stepcheck-input/static/names-quoted", test_static_names_quoted);
  g_test_add_func("/stepcheck-input/static/row-read-whole", test_static_row_read_whole);
  g_test_add_func("/stepcheck-input/summary-names-escaped", test_summary_names_escaped);
  return g_test_run();
}
