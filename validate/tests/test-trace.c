/* test-trace.c: captured CUDA traces without a GPU (validate/trace.c, capture.c): a
 * hand-made capture read back (records, sorting, NVTX pairing and nesting, kernel
 * owners), the profile tables it gives (medians and standard deviations computed by hand,
 * numeric row order, the fastest backend kept, repeats of chained runs), the summaries and the
 * Chrome trace JSON, a capture whose program died inside a range, every malformed-row error with
 * its FILE:LINE:COL, and `ema-validate capture` machinery that needs no CUDA (a program's exit
 * status kept, a missing trace reported). Times in the fixtures are nanoseconds. */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <sys/stat.h>

#include "capture.h"
#include "ema/run/output.h"
#include "errors.h"
#include "testutil.h"
#include "trace.h"

#define KERNEL_HEADER                                                                              \
  "start_ns,end_ns,device,context,stream,correlation,grid_x,grid_y,grid_z,block_x,block_y,"        \
  "block_z,registers,shared_bytes,graph,name\n"

static void write_text(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

static char *read_text(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  return text;
}

/* a kernel row: START, END and NAME (already CSV-quoted), the rest fixed */
static char *kernel_row(guint64 start, guint64 end, const char *name) {
  return g_strdup_printf("%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                         ",0,1,7,1,16,32,1,256,1,1,128,1024,0,%s\n",
                         start, end, name);
}

/* The capture of the fixture: two gemm points (m=16: three repeats of 1.0, 2.3 and 1.5 us;
 * m=2: one of 2.0 us), one decode-attention shape with two backends (cudnn 1.0 us, flash
 * 0.5 us), a kernel outside every range, a mark, a memcpy, a memset, an allocation and its
 * release, a VMM call. */
static char *write_fixture(void) {
  char *dir = ema_test_temp_dir();
  GString *k = g_string_new(KERNEL_HEADER);
  const struct {
    guint64 start, end;
    const char *name;
  } rows[] = {
      {3500, 5500, "\"gemm \"\"tn\"\" kernel\""}, /* listed out of order: sorted on load */
      {1500, 2500, "\"void f<int, 2>(float*)\""},
      {5600, 5900, "\"gemm \"\"tn\"\" kernel\""},
      {6100, 7600, "plain"},
      {11000, 13000, "plain"},
      {21000, 22000, "cudnn_sdpa"},
      {31000, 31500, "flash_fwd"},
      {50000, 50100, "orphan"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
    g_autofree char *row = kernel_row(rows[i].start, rows[i].end, rows[i].name);
    g_string_append(k, row);
  }
  write_text(dir, "kernels.csv", k->str);
  g_string_free(k, TRUE);
  write_text(dir, "nvtx.csv",
             "timestamp_ns,flags,id,domain,name\n"
             "1000,start,1,\"\",\"ema.point gemm m=16 k=4096 n=8 dtype=bf16\"\n"
             "1000,start,2,\"\",\"ema.rep\"\n"
             "3000,end,2,\"\",\"\"\n"
             "3000,start,3,\"\",\"ema.rep\"\n"
             "6000,end,3,\"\",\"\"\n"
             "6000,start,4,\"\",\"ema.rep\"\n"
             "9000,end,4,\"\",\"\"\n"
             "10000,end,1,\"\",\"\"\n"
             "10000,start,5,\"\",\"ema.point gemm m=2 k=4096 n=8 dtype=bf16\"\n"
             "10000,start,6,\"\",\"ema.rep\"\n"
             "14000,end,6,\"\",\"\"\n"
             "14000,end,5,\"\",\"\"\n"
             "20000,start,7,\"\",\"ema.point attn_decode batch=1 context=1024 backend=cudnn\"\n"
             "20000,start,8,\"\",\"ema.rep\"\n"
             "25000,end,8,\"\",\"\"\n"
             "30000,end,7,\"\",\"\"\n"
             "30000,start,9,\"\",\"ema.point attn_decode batch=1 context=1024 backend=flash\"\n"
             "30000,start,10,\"\",\"ema.rep\"\n"
             "35000,end,10,\"\",\"\"\n"
             "40000,end,9,\"\",\"\"\n"
             "45000,mark,11,\"d\",\"a mark\"\n");
  write_text(dir, "memcpy.csv",
             "start_ns,end_ns,device,stream,kind,bytes,src_device,dst_device\n"
             "15000,16000,0,7,HtoD,4096,0,0\n");
  write_text(dir, "memset.csv",
             "start_ns,end_ns,device,stream,bytes,value\n"
             "17000,17500,0,7,1024,0\n");
  write_text(dir, "memory.csv",
             "timestamp_ns,device,stream,operation,memory_kind,address,bytes\n"
             "500,0,4294967295,alloc,device,4096,2097152\n"
             "60000,0,4294967295,release,device,4096,2097152\n");
  write_text(dir, "vmm.csv",
             "start_ns,end_ns,call,bytes,result\n"
             "700,900,cuMemCreate,2097152,0\n");
  write_text(dir, "capture.txt", "pid: 1\nended: exit\n");
  return dir;
}

static void test_load(void) {
  g_autofree char *dir = write_fixture();
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->kernels->len, ==, 8);
  g_assert_cmpuint(t->copies->len, ==, 2);
  g_assert_cmpuint(t->memory->len, ==, 2);
  g_assert_cmpuint(t->vmm->len, ==, 1);
  g_assert_cmpuint(t->ranges->len, ==, 11);
  g_assert_cmpuint(t->unmatched_markers, ==, 0);
  const EmaTraceKernel *k0 = &g_array_index(t->kernels, EmaTraceKernel, 0);
  g_assert_cmpuint(k0->start_ns, ==, 1500);
  g_assert_cmpstr(k0->name, ==, "void f<int, 2>(float*)");
  g_assert_cmpuint(k0->grid[1], ==, 32);
  g_assert_cmpuint(k0->block[0], ==, 256);
  g_assert_cmpstr(g_array_index(t->kernels, EmaTraceKernel, 1).name, ==, "gemm \"tn\" kernel");
  const EmaTraceCopy *memset = &g_array_index(t->copies, EmaTraceCopy, 1);
  g_assert_cmpstr(memset->kind, ==, "memset");
  g_assert_cmpint(memset->src_device, ==, -1);
  g_assert_cmpstr(g_array_index(t->vmm, EmaTraceVmm, 0).call, ==, "cuMemCreate");
  /* ranges by start, the outer first at a tie: point, its three repeats, ... */
  const EmaTraceRange *r = (const EmaTraceRange *) (void *) t->ranges->data;
  g_assert_cmpstr(r[0].name, ==, "ema.point gemm m=16 k=4096 n=8 dtype=bf16");
  g_assert_cmpint(r[0].parent, ==, -1);
  g_assert_cmpstr(r[1].name, ==, "ema.rep");
  g_assert_cmpint(r[1].parent, ==, 0);
  g_assert_cmpint(r[1].depth, ==, 1);
  g_assert_cmpint(r[3].parent, ==, 0);
  g_assert_cmpint(r[4].parent, ==, -1); /* m=2 starts where m=16 ends: not inside it */
  g_assert_cmpint(r[5].parent, ==, 4);
  g_assert_cmpstr(r[10].name, ==, "a mark");
  g_assert_cmpuint(r[10].end_ns, ==, r[10].start_ns);
  g_assert_nonnull(t->summary);

  g_autoptr(GArray) owners = ema_trace_kernel_owners(t);
  const int expected[] = {1, 2, 2, 3, 5, 7, 9, -1};
  for (guint i = 0; i < G_N_ELEMENTS(expected); i++)
    g_assert_cmpint(g_array_index(owners, int, i), ==, expected[i]);
  ema_test_remove_tree(dir);
}

static void test_profiles(void) {
  g_autofree char *dir = write_fixture();
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) tables = NULL;
  gboolean written = ema_trace_write_profiles(t, dir, &tables, &error);
  g_assert_no_error(error);
  g_assert_true(written);
  g_assert_cmpuint(tables->len, ==, 3);
  g_assert_cmpstr(g_ptr_array_index(tables, 0), ==, "attn_decode-backends.csv");
  g_assert_cmpstr(g_ptr_array_index(tables, 1), ==, "attn_decode.csv");
  g_assert_cmpstr(g_ptr_array_index(tables, 2), ==, "gemm.csv");
  /* m=16: repeats 1.0, 2.3, 1.5 us: median 1.5, std sqrt(0.43); m=2 sorts first (numeric) */
  g_autofree char *gemm = read_text(dir, "gemm.csv");
  g_assert_cmpstr(gemm, ==,
                  "m,k,n,dtype,time_us,std_us,repeats\n"
                  "2,4096,8,bf16,2.000,0.000,1\n"
                  "16,4096,8,bf16,1.500,0.656,3\n");
  g_autofree char *attn = read_text(dir, "attn_decode.csv");
  g_assert_cmpstr(attn, ==,
                  "batch,context,backend,time_us,std_us,repeats\n1,1024,flash,0.500,0.000,1\n");
  g_autofree char *all = read_text(dir, "attn_decode-backends.csv");
  g_assert_cmpstr(all, ==,
                  "batch,context,backend,time_us,std_us,repeats\n"
                  "1,1024,cudnn,1.000,0.000,1\n1,1024,flash,0.500,0.000,1\n");
  ema_test_remove_tree(dir);
}

static void test_summaries_and_chrome(void) {
  g_autofree char *dir = write_fixture();
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_assert_true(ema_trace_write_summaries(t, dir, &error));
  g_autofree char *ranges = read_text(dir, "ranges.csv");
  /* the m=16 point owns its repeats' kernels: 1.0 + 2.3 + 1.5 us, spanning 1500..7600 */
  ema_test_assert_contains(ranges,
                           "\"ema.point gemm m=16 k=4096 n=8 dtype=bf16\",1,4,4.800,4.800,4.800,"
                           "6.100,6.100,6.100\n");
  /* four repeats of 1.0, 2.3, 1.5 (m=16) and 2.0 (m=2) us, and two of the attention */
  ema_test_assert_contains(ranges, "\"ema.rep\",6,1,1.250,0.500,2.300,");
  g_autofree char *names = read_text(dir, "kernel-names.csv");
  ema_test_assert_contains(names, "\"plain\",2,3.500,1.750,1.500,2.000\n");
  ema_test_assert_contains(names, "\"gemm \"\"tn\"\" kernel\",2,2.300,1.150,0.300,2.000\n");

  g_autofree char *json_path = g_build_filename(dir, "trace.json", NULL);
  g_assert_true(ema_trace_write_chrome(t, json_path, &error));
  g_autoptr(JsonParser) parser = json_parser_new();
  g_assert_true(json_parser_load_from_file(parser, json_path, &error));
  g_assert_no_error(error);
  JsonArray *events = json_object_get_array_member(
      json_node_get_object(json_parser_get_root(parser)), "traceEvents");
  /* 8 kernels, 2 copies, 11 ranges, 1 VMM call, 2 memory counter samples */
  g_assert_cmpuint(json_array_get_length(events), ==, 24);
  JsonObject *first = json_array_get_object_element(events, 0);
  g_assert_cmpstr(json_object_get_string_member(first, "pid"), ==, "GPU 0");
  /* the first record is the allocation at 500 ns: the kernel at 1500 is 1 us after it */
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(first, "ts"), 1.0, 1e-9);
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(first, "dur"), 1.0, 1e-9);
  JsonObject *last = json_array_get_object_element(events, 23);
  g_assert_cmpstr(json_object_get_string_member(last, "ph"), ==, "C");
  g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(last, "args"), "bytes"),
                  ==, 0);
  ema_test_remove_tree(dir);
}

/* the program died inside a range: the range is kept up to the last record */
static void test_crashed(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *k1 = kernel_row(100, 200, "a");
  g_autofree char *k2 = kernel_row(300, 900, "b");
  g_autofree char *kernels = g_strconcat(KERNEL_HEADER, k1, k2, NULL);
  write_text(dir, "kernels.csv", kernels);
  write_text(dir, "nvtx.csv",
             "timestamp_ns,flags,id,domain,name\n"
             "50,start,1,\"\",\"dies inside\"\n"
             "60,end,7,\"\",\"\"\n");
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->ranges->len, ==, 1);
  g_assert_cmpuint(t->unmatched_markers, ==, 2);
  g_assert_cmpuint(g_array_index(t->ranges, EmaTraceRange, 0).end_ns, ==, 900);
  g_assert_null(t->summary);
  g_autoptr(GArray) owners = ema_trace_kernel_owners(t);
  g_assert_cmpint(g_array_index(owners, int, 0), ==, 0);
  g_assert_cmpint(g_array_index(owners, int, 1), ==, 0);
  ema_test_remove_tree(dir);
}

/* repeats of chained runs ("ema.rep x2"): a repeat's time is its kernels' sum over the runs; two
 * runs each of (1.0 + 1.0), (3.0 + 1.0), (1.5 + 1.5) us: 1.0, 2.0, 1.5 per run, median 1.5,
 * standard deviation sqrt(((-0.5)^2 + 0.5^2 + 0) / 2) = 0.5 */
static void test_chained_repeats(void) {
  g_autofree char *dir = ema_test_temp_dir();
  GString *k = g_string_new(KERNEL_HEADER);
  const guint64 rows[][2] = {{1100, 2100}, {2200, 3200},  {4100, 7100},
                             {7200, 8200}, {9100, 10600}, {10700, 12200}};
  for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
    g_autofree char *row = kernel_row(rows[i][0], rows[i][1], "gemm_bias");
    g_string_append(k, row);
  }
  write_text(dir, "kernels.csv", k->str);
  g_string_free(k, TRUE);
  write_text(dir, "nvtx.csv",
             "timestamp_ns,flags,id,domain,name\n"
             "1000,start,1,\"\",\"ema.point gemm m=4 k=8 n=8 dtype=bf16 bias=1\"\n"
             "1000,start,2,\"\",\"ema.rep x2\"\n"
             "4000,end,2,\"\",\"\"\n"
             "4000,start,3,\"\",\"ema.rep x2\"\n"
             "9000,end,3,\"\",\"\"\n"
             "9000,start,4,\"\",\"ema.rep x2\"\n"
             "13000,end,4,\"\",\"\"\n"
             "13000,end,1,\"\",\"\"\n");
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_assert_true(ema_trace_write_profiles(t, dir, NULL, &error));
  g_assert_no_error(error);
  g_autofree char *gemm = read_text(dir, "gemm.csv");
  g_assert_cmpstr(gemm, ==,
                  "m,k,n,dtype,bias,time_us,std_us,repeats\n"
                  "4,8,8,bf16,1,1.500,0.500,3\n");
  ema_test_remove_tree(dir);
}

static void assert_load_error(const char *file, const char *text, const char *message) {
  g_autofree char *dir = write_fixture();
  write_text(dir, file, text);
  GError *error = NULL;
  EmaTrace *t = ema_trace_load(dir, &error);
  g_assert_null(t);
  g_assert_nonnull(error);
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
  g_autofree char *expected = g_strdup_printf("%s/%s%s", dir, file, message);
  if (!g_str_has_prefix(error->message, expected))
    g_error("'%s' does not start with '%s'", error->message, expected);
  g_error_free(error);
  ema_test_remove_tree(dir);
}

static void test_errors(void) {
  assert_load_error("kernels.csv", "start,end\n",
                    ":1:1: the header is not 'start_ns,end_ns,device,");
  assert_load_error("kernels.csv", KERNEL_HEADER "12x,20,0,1,7,1,1,1,1,1,1,1,1,1,0,a\n",
                    ":2:1: not an unsigned integer");
  assert_load_error("kernels.csv", KERNEL_HEADER "500,400,0,1,7,1,1,1,1,1,1,1,1,1,0,a\n",
                    ":2:5: ends before it starts");
  assert_load_error("kernels.csv", KERNEL_HEADER "1,2,3\n",
                    ":2:6: 3 fields where the header has 16");
  assert_load_error("kernels.csv", KERNEL_HEADER "1,2,0,1,7,1,1,1,1,1,1,1,1,1,0,\"a\n",
                    ":2:31: unterminated quoted field");
  assert_load_error("nvtx.csv", "timestamp_ns,flags,id,domain,name\n5,begin,1,\"\",\"x\"\n",
                    ":2:3: flags is not start, end or mark");
  assert_load_error("memory.csv",
                    "timestamp_ns,device,stream,operation,memory_kind,address,bytes\n"
                    "1,0,0,free,device,1,1\n",
                    ":2:7: operation is neither alloc nor release");
  assert_load_error("vmm.csv", "start_ns,end_ns,call,bytes,result\n1,2,cuMemMap,4,x\n",
                    ":2:16: not an integer");
  /* kernels.csv is required; the other files are not */
  g_autofree char *empty = ema_test_temp_dir();
  GError *error = NULL;
  g_assert_null(ema_trace_load(empty, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  g_clear_error(&error);
  write_text(empty, "kernels.csv", KERNEL_HEADER);
  EmaTrace *t = ema_trace_load(empty, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->kernels->len + t->ranges->len + t->copies->len, ==, 0);
  ema_trace_free(t);
  ema_test_remove_tree(empty);
}

static void assert_profile_error(const char *nvtx, const char *message) {
  g_autofree char *dir = write_fixture();
  write_text(dir, "nvtx.csv", nvtx);
  GError *error = NULL;
  g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
  g_assert_no_error(error);
  g_assert_false(ema_trace_write_profiles(t, dir, NULL, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
  ema_test_assert_contains(error->message, message);
  g_error_free(error);
  ema_test_remove_tree(dir);
}

/* nvtx.csv with one range NAME (from 100 to 300 ns) and nothing in it */
static char *one_range(const char *name) {
  return g_strdup_printf("timestamp_ns,flags,id,domain,name\n100,start,1,\"\",\"%s\"\n"
                         "300,end,1,\"\",\"\"\n",
                         name);
}

/* nvtx.csv with two ranges FIRST and SECOND one after the other, each with one repeat */
static char *two_points(const char *first, const char *second) {
  return g_strdup_printf("timestamp_ns,flags,id,domain,name\n"
                         "1000,start,1,\"\",\"%s\"\n1000,start,2,\"\",\"ema.rep\"\n"
                         "3000,end,2,\"\",\"\"\n3000,end,1,\"\",\"\"\n"
                         "3000,start,3,\"\",\"%s\"\n3000,start,4,\"\",\"ema.rep\"\n"
                         "6000,end,4,\"\",\"\"\n6000,end,3,\"\",\"\"\n",
                         first, second);
}

/* each error about a range is at the line of its start in nvtx.csv */
static void test_profile_errors(void) {
  const char *head = "timestamp_ns,flags,id,domain,name\n";
  g_autofree char *no_rep = g_strconcat(head, "1000,start,1,\"\",\"ema.point gemm m=1\"\n",
                                        "9000,end,1,\"\",\"\"\n", NULL);
  assert_profile_error(no_rep, "nvtx.csv:2: NVTX range 'ema.point gemm m=1': no 'ema.rep' range "
                               "inside it");
  g_autofree char *idle = g_strconcat(head, "100,start,1,\"\",\"ema.point gemm m=1\"\n",
                                      "100,start,2,\"\",\"ema.rep\"\n", "200,end,2,\"\",\"\"\n",
                                      "300,end,1,\"\",\"\"\n", NULL);
  assert_profile_error(idle,
                       "nvtx.csv:2: NVTX range 'ema.point gemm m=1': a repeat owns no kernel");
  g_autofree char *bad = one_range("ema.point gemm m");
  assert_profile_error(bad, "nvtx.csv:2: NVTX range 'ema.point gemm m': not 'ema.point TABLE "
                            "KEY=VALUE...'");
  /* 37#7, 37#17: the table is one file name in -o, the values CSV cells */
  g_autofree char *escape = one_range("ema.point ../../escaped m=1");
  assert_profile_error(escape, "table '../../escaped' is not a table name");
  g_autofree char *comma = one_range("ema.point gemm m=1,2");
  assert_profile_error(comma, "'m=1,2' holds a comma, quote or line break");
  g_autofree char *keys = two_points("ema.point gemm m=1", "ema.point gemm n=1");
  assert_profile_error(keys, "nvtx.csv:6: NVTX range 'ema.point gemm n=1': its keys differ from "
                             "those of the table's first point");
  /* a key twice, or named as a column the repeats give, would repeat a column of TABLE.csv;
   * a point measured twice would be two rows of one shape: the profile loader refuses both */
  g_autofree char *twice = one_range("ema.point gemm m=1 m=2");
  assert_profile_error(twice,
                       "nvtx.csv:2: NVTX range 'ema.point gemm m=1 m=2': key 'm' given twice");
  g_autofree char *column = one_range("ema.point gemm m=1 repeats=3");
  assert_profile_error(column, "key 'repeats' names a column the table gets from the repeats");
  g_autofree char *again = two_points("ema.point gemm m=1", "ema.point gemm m=1");
  assert_profile_error(again, "nvtx.csv:6: NVTX range 'ema.point gemm m=1': the same point as "
                              "line 2 (measured twice)");
  /* a point or a repeat the workload never ended (it died inside it) was profiled as if it
   * had ended with the capture */
  g_autofree char *point_unended =
      g_strconcat(head, "1000,start,1,\"\",\"ema.point gemm m=1\"\n",
                  "1000,start,2,\"\",\"ema.rep\"\n", "3000,end,2,\"\",\"\"\n", NULL);
  assert_profile_error(point_unended, "nvtx.csv:2: NVTX range 'ema.point gemm m=1' never ends in "
                                      "nvtx.csv (the workload stopped inside it?)");
  g_autofree char *rep_unended =
      g_strconcat(head, "1000,start,1,\"\",\"ema.point gemm m=1\"\n",
                  "1000,start,2,\"\",\"ema.rep\"\n", "9000,end,1,\"\",\"\"\n", NULL);
  assert_profile_error(rep_unended, "nvtx.csv:3: NVTX range 'ema.rep' never ends in nvtx.csv (the "
                                    "workload stopped inside it?)");
  /* a name of any length is quoted cut (a 100 kB name made a 100 kB message) */
  {
    g_autofree char *words = g_strnfill(100000, 'x');
    g_autofree char *name = g_strconcat("ema.point gemm ", words, NULL);
    g_autofree char *long_name = one_range(name);
    g_autofree char *long_value = g_strconcat("ema.point gemm m=", words, ",", NULL);
    g_autofree char *long_comma = one_range(long_value);
    g_autofree char *long_table = g_strconcat("ema.point ", words, "/ m=1", NULL);
    g_autofree char *table = one_range(long_table);
    const char *const nvtx[] = {long_name, long_comma, table};
    for (guint i = 0; i < G_N_ELEMENTS(nvtx); i++) {
      g_autofree char *dir = write_fixture();
      GError *error = NULL;
      write_text(dir, "nvtx.csv", nvtx[i]);
      g_autoptr(EmaTrace) t = ema_trace_load(dir, &error);
      g_assert_no_error(error);
      g_assert_false(ema_trace_write_profiles(t, dir, NULL, &error));
      ema_test_assert_contains(error->message, "NVTX range 'ema.point ");
      g_assert_cmpuint(strlen(error->message), <, 400);
      g_error_free(error);
      ema_test_remove_tree(dir);
    }
  }
  const char *const bad_runs[] = {"ema.rep x0", "ema.rep xy", "ema.rep 4", "ema.rep x"};
  for (guint i = 0; i < G_N_ELEMENTS(bad_runs); i++) {
    g_autofree char *runs =
        g_strdup_printf("%s1000,start,1,\"\",\"ema.point gemm m=1\"\n"
                        "1000,start,2,\"\",\"%s\"\n3000,end,2,\"\",\"\"\n3000,end,1,\"\",\"\"\n",
                        head, bad_runs[i]);
    g_autofree char *message = g_strdup_printf(
        "nvtx.csv:3: NVTX range '%s': not 'ema.rep' or 'ema.rep xN' (N runs, N >= 1)", bad_runs[i]);
    assert_profile_error(runs, message);
  }
}

/* What the capture functions print (g_print), kept instead of written to
 * the test's TAP output. */
static GString *printed;

static void keep_printed(const gchar *text) {
  g_string_append(printed, text);
}

/* capture without CUDA: the program's status is kept; no trace is an error that says so and
 * why it may be (the library never started); a workload.yaml that is a FIFO is refused, never
 * waited on */
static void test_capture_run(void) {
  GPrintFunc previous;
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "c", NULL);
  char *argv[] = {(char *) "sh", (char *) "-c",
                  (char *) "test -n \"$CUDA_INJECTION64_PATH\" && "
                           "test \"$NVTX_INJECTION64_PATH\" = \"$CUDA_INJECTION64_PATH\" && "
                           "printf '%s' \"$EMA_CAPTURE_BUFFERS\" > \"$EMA_CAPTURE_DIR/buffers\" && "
                           "exit 3",
                  NULL};
  EmaCaptureOptions o = {.dir = out, .library = "/lib/fake.so", .argv = argv, .buffers = 4};
  int status = -1;
  GError *error = NULL;
  printed = g_string_new(NULL);
  previous = g_set_print_handler(keep_printed);
  g_assert_false(ema_capture_run(&o, &status, &error));
  g_assert_cmpint(status, ==, 3);
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  ema_test_assert_contains(error->message, "capture: sh exited with status 3 and produced no "
                                           "kernel trace (no ");
  ema_test_assert_contains(error->message, "/kernels.csv): the capture library never started in "
                                           "it, as when there is no GPU or CUDA driver, CUPTI is "
                                           "unavailable, or the program makes no CUDA call");
  g_clear_error(&error);
  g_autofree char *buffers = read_text(out, "buffers");
  g_assert_cmpstr(buffers, ==, "4");
  /* a program that records a trace (here: written by hand) and is killed still converts */
  g_autofree char *fixture = write_fixture();
  g_autofree char *script =
      g_strdup_printf("cp %s/*.csv \"$EMA_CAPTURE_DIR\" && kill -9 $$", fixture);
  char *argv2[] = {(char *) "sh", (char *) "-c", script, NULL};
  o.argv = argv2;
  g_assert_true(ema_capture_run(&o, &status, &error));
  g_assert_no_error(error);
  g_assert_cmpint(status, ==, 128 + 9);
  g_autofree char *json = g_build_filename(out, "trace.json", NULL);
  g_assert_true(g_file_test(json, G_FILE_TEST_IS_REGULAR));
  /* profile.yaml from it: the workload's lines, then date, command, source, tables */
  write_text(out, "workload.yaml", "device: \"NVIDIA H200\"\n  # a comment\n");
  g_autofree char *prof = g_build_filename(dir, "p", NULL);
  g_assert_true(ema_capture_write_profile(out, prof, "ema-validate profile -o p", &error));
  g_assert_no_error(error);
  g_autofree char *yaml = read_text(prof, "profile.yaml");
  ema_test_assert_contains(yaml, "device: \"NVIDIA H200\"\n  # a comment\ndate: ");
  ema_test_assert_contains(yaml, "command: \"ema-validate profile -o p\"\nsource: measured\n"
                                 "tables:\n  - attn_decode.csv\n  - gemm.csv\n"
                                 "backend_tables:\n  - attn_decode-backends.csv\n");
  write_text(out, "workload.yaml", "device NVIDIA\n");
  g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
  ema_test_assert_contains(error->message, "workload.yaml:1:1: not a 'key: value' line");
  g_clear_error(&error);
  /* what would leave profile.yaml a file that does not load (a key twice, a key it writes
   * itself, a NUL byte that cut the line short, a list) is an error at its place */
  {
    const struct {
      const char *text;
      gsize length;
      const char *message;
    } cases[] = {
        {"device: \"a\"\ndevice: \"b\"\n", 0, "workload.yaml:2:1: duplicate key 'device'"},
        {"device: \"a\"\ntables: [x.csv]\n", 0,
         "workload.yaml:2:1: tables: profile.yaml writes this key itself"},
        {"device: \"a\0b\"\n", 13, "workload.yaml:1:11: not a text file (a NUL byte)"},
        {"- a\n- b\n", 0, "workload.yaml:1:1: not a map of 'key: value' lines"},
    };
    g_autofree char *workload = g_build_filename(out, "workload.yaml", NULL);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      g_assert_true(g_file_set_contents(workload, cases[i].text,
                                        cases[i].length ? (gssize) cases[i].length : -1, NULL));
      g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
      ema_test_assert_contains(error->message, cases[i].message);
      g_clear_error(&error);
    }
  }
  /* a capture that does not read (its workload.yaml above, a folder that is not there), or
   * whose points break the protocol or are absent, leaves the earlier profile as it was */
  {
    g_autofree char *kept = read_text(prof, "profile.yaml");
    g_autofree char *missing = g_build_filename(dir, "no-such-capture", NULL);
    g_autofree char *nvtx = read_text(out, "nvtx.csv");
    const char *const broken[][2] = {
        {"timestamp_ns,flags,id,domain,name\n"
         "1000,start,1,\"\",\"ema.point gemm\"\n"
         "9000,end,1,\"\",\"\"\n",
         "not 'ema.point TABLE KEY=VALUE...'"},
        {"timestamp_ns,flags,id,domain,name\n", "no 'ema.point' NVTX range"}};
    g_assert_cmpstr(kept, ==, yaml);
    g_assert_false(ema_capture_write_profile(missing, prof, "x", &error));
    g_clear_error(&error);
    write_text(out, "workload.yaml", "device: \"NVIDIA H200\"\n");
    for (guint i = 0; i < G_N_ELEMENTS(broken); i++) {
      write_text(out, "nvtx.csv", broken[i][0]);
      g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
      ema_test_assert_contains(error->message, broken[i][1]);
      g_clear_error(&error);
    }
    write_text(out, "nvtx.csv", nvtx);
    g_free(kept);
    kept = read_text(prof, "profile.yaml");
    g_assert_cmpstr(kept, ==, yaml);
    g_free(read_text(prof, "gemm.csv"));
  }
  {
    g_autofree char *workload = g_build_filename(out, "workload.yaml", NULL);
    g_assert_cmpint(g_remove(workload), ==, 0);
    g_assert_cmpint(mkfifo(workload, 0600), ==, 0);
    g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
    ema_test_assert_contains(error->message, "workload.yaml: not a regular file (a FIFO)");
    g_clear_error(&error);
  }
  /* the killed program's summary, and the profile's */
  g_set_print_handler(previous);
  ema_test_assert_contains(printed->str, "capture: sh exited with status 137; ");
  ema_test_assert_contains(printed->str, " NVTX ranges (0 unmatched markers) in ");
  ema_test_assert_contains(printed->str, "profile: 3 tables from ");
  g_string_free(printed, TRUE);
  ema_test_remove_tree(fixture);
  ema_test_remove_tree(dir);
}

/* DIR/NAME is absent. */
static void assert_absent(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
}

/* 37#3: a capture claims its folder as ema-sim's runs claim theirs: a non-empty folder no claim
 * made is refused before the program runs; a second capture into its own folder removes what the
 * first wrote (its trace is gone when the second program records none) and keeps a user's file;
 * and a profile table is never written over a user's file of its name. */
static void test_capture_claim(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fixture = write_fixture();
  g_autofree char *out = g_build_filename(dir, "c", NULL);
  g_autofree char *prof = g_build_filename(dir, "p", NULL);
  g_autofree char *copy = g_strdup_printf("cp %s/*.csv \"$EMA_CAPTURE_DIR\"", fixture);
  char *records[] = {(char *) "sh", (char *) "-c", copy, NULL};
  char *ran[] = {(char *) "sh", (char *) "-c", (char *) "touch \"$EMA_CAPTURE_DIR/ran\"", NULL};
  EmaCaptureOptions o = {.dir = dir, .library = "/lib/fake.so", .argv = ran};
  const char *const written[] = {"kernels.csv", "ranges.csv", "trace.json"};
  int status = -1;
  GError *error = NULL;
  GPrintFunc previous;
  write_text(dir, "notes.txt", "mine\n");
  g_assert_false(ema_capture_run(&o, &status, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST);
  ema_test_assert_contains(error->message, "is not empty and not an ema-sim output folder");
  g_clear_error(&error);
  assert_absent(dir, "ran");

  printed = g_string_new(NULL);
  previous = g_set_print_handler(keep_printed);
  o.dir = out;
  o.argv = records;
  g_assert_true(ema_capture_run(&o, &status, &error));
  g_assert_no_error(error);
  write_text(out, "notes.txt", "mine\n");
  o.argv = ran;
  g_assert_false(ema_capture_run(&o, &status, &error));
  ema_test_assert_contains(error->message, "produced no kernel trace");
  g_clear_error(&error);
  for (guint i = 0; i < G_N_ELEMENTS(written); i++)
    assert_absent(out, written[i]);
  g_autofree char *notes = read_text(out, "notes.txt");
  g_assert_cmpstr(notes, ==, "mine\n");

  o.argv = records;
  g_assert_true(ema_capture_run(&o, &status, &error));
  write_text(out, "workload.yaml", "device: \"NVIDIA H200\"\n");
  g_assert_true(g_mkdir_with_parents(prof, 0755) == 0);
  write_text(prof, "gemm.csv", "mine\n");
  /* a folder no claim made is refused; one claimed (as `ema-validate profile` claims its -o
   * before a capture runs) keeps the user's file of a table's name */
  g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
  ema_test_assert_contains(error->message, "is not empty and not an ema-sim output folder");
  g_clear_error(&error);
  g_autofree char *user_table = g_build_filename(prof, "gemm.csv", NULL);
  g_assert_cmpint(g_remove(user_table), ==, 0);
  g_assert_true(
      ema_output_claim_dir_full(prof, ema_capture_profile_entries, EMA_OUTPUT_CLAIM_CLEAR, &error));
  write_text(prof, "gemm.csv", "mine\n");
  g_assert_false(ema_capture_write_profile(out, prof, "x", &error));
  ema_test_assert_contains(error->message, "gemm.csv exists and is not ema-sim's");
  g_clear_error(&error);
  g_autofree char *table = read_text(prof, "gemm.csv");
  g_assert_cmpstr(table, ==, "mine\n");
  g_set_print_handler(previous);
  g_string_free(printed, TRUE);
  ema_test_remove_tree(fixture);
  ema_test_remove_tree(dir);
}

/* A capture's and a profile's folders record their kind (output.h): a capture into a sweep's
 * folder is refused before the program runs (it emptied the sweep), and a profile written into
 * a capture's folder is refused with the capture kept (the profile's claim removed the capture
 * it had just read). */
static void test_claim_kinds(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fixture = write_fixture();
  g_autofree char *sweep = g_build_filename(dir, "sweep", NULL);
  g_autofree char *out = g_build_filename(dir, "c", NULL);
  g_autofree char *copy = g_strdup_printf("cp %s/*.csv \"$EMA_CAPTURE_DIR\"", fixture);
  char *records[] = {(char *) "sh", (char *) "-c", copy, NULL};
  EmaCaptureOptions o = {.dir = sweep, .library = "/lib/fake.so", .argv = records};
  int status = -1;
  GError *error = NULL;
  GPrintFunc previous;
  g_assert_true(g_mkdir_with_parents(sweep, 0755) == 0);
  write_text(sweep, ".ema-output", "# kind: sweep\nsweep.csv\n");
  write_text(sweep, "sweep.csv", "point\n");
  g_assert_false(ema_capture_run(&o, &status, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST);
  ema_test_assert_contains(error->message, "holds the output of ema-sim sweep");
  g_clear_error(&error);
  {
    g_autofree char *kept = read_text(sweep, "sweep.csv");
    g_assert_cmpstr(kept, ==, "point\n");
  }
  assert_absent(sweep, "kernels.csv");

  printed = g_string_new(NULL);
  previous = g_set_print_handler(keep_printed);
  o.dir = out;
  g_assert_true(ema_capture_run(&o, &status, &error));
  g_assert_no_error(error);
  {
    g_autofree char *marker = read_text(out, ".ema-output");
    ema_test_assert_contains(marker, "# kind: " EMA_CAPTURE_OUTPUT_KIND "\n");
  }
  write_text(out, "workload.yaml", "device: \"NVIDIA H200\"\n");
  g_assert_false(ema_capture_write_profile(out, out, "x", &error));
  ema_test_assert_contains(error->message, "holds the output of " EMA_CAPTURE_OUTPUT_KIND);
  g_clear_error(&error);
  g_free(read_text(out, "kernels.csv"));
  g_free(read_text(out, "nvtx.csv"));
  assert_absent(out, "profile.yaml");
  g_set_print_handler(previous);
  g_string_free(printed, TRUE);
  ema_test_remove_tree(fixture);
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/trace/load", test_load);
  g_test_add_func("/validate/trace/capture-claim", test_capture_claim);
  g_test_add_func("/validate/trace/claim-kinds", test_claim_kinds);
  g_test_add_func("/validate/trace/profiles", test_profiles);
  g_test_add_func("/validate/trace/chained-repeats", test_chained_repeats);
  g_test_add_func("/validate/trace/summaries-chrome", test_summaries_and_chrome);
  g_test_add_func("/validate/trace/crashed", test_crashed);
  g_test_add_func("/validate/trace/errors", test_errors);
  g_test_add_func("/validate/trace/profile-errors", test_profile_errors);
  g_test_add_func("/validate/trace/capture-run", test_capture_run);
  return g_test_run();
}
