/* cudacheck.c: CUDA errors as GErrors, the driver-API entry points, and
 * the versions for provenance lines (cudacheck.h). */
#include "cudacheck.h"

#include <string.h>

static const char *source_name(const char *file) {
  const char *slash = strrchr(file, '/');
  return slash ? slash + 1 : file;
}

static void set_cuda_error(GError **error, int device, const char *call, const char *message,
                           const char *name, const char *file, int line) {
  g_autofree char *where = device >= 0 ? g_strdup_printf("GPU %d: ", device) : g_strdup("");
  if (error == NULL || *error != NULL)
    return; /* the first error is the one that matters */
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_CUDA, "%s%s: %s (%s) [%s:%d]", where,
              call, message, name, source_name(file), line);
}

gboolean ema_cuda_result(cudaError_t result, const char *call, int device, const char *file,
                         int line, GError **error) {
  if (result == cudaSuccess)
    return TRUE;
  /* Clear the runtime's last-error state, so that a later launch check does
   * not report this failure again (sticky errors stay regardless). */
  (void) cudaGetLastError();
  set_cuda_error(error, device, call, cudaGetErrorString(result), cudaGetErrorName(result), file,
                 line);
  return FALSE;
}

static EmaDriverApi driver_api;
static gboolean driver_api_loaded;

gboolean ema_cu_result(CUresult result, const char *call, int device, const char *file, int line,
                       GError **error) {
  const char *message = NULL, *name = NULL;
  g_autofree char *number = NULL;
  if (result == CUDA_SUCCESS)
    return TRUE;
  if (driver_api_loaded) {
    if (driver_api.get_error_string(result, &message) != CUDA_SUCCESS)
      message = NULL;
    if (driver_api.get_error_name(result, &name) != CUDA_SUCCESS)
      name = NULL;
  }
  number = g_strdup_printf("CUresult %d", (int) result);
  set_cuda_error(error, device, call, message ? message : "driver error", name ? name : number,
                 file, line);
  return FALSE;
}

/* Resolve SYMBOL at ABI VERSION into *FUNCTION. */
static gboolean resolve(const char *symbol, unsigned int version, void **function, GError **error) {
  enum cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (!ema_cuda_result(
          cudaGetDriverEntryPointByVersion(symbol, function, version, cudaEnableDefault, &status),
          "cudaGetDriverEntryPointByVersion", -1, __FILE__, __LINE__, error))
    return FALSE;
  if (status != cudaDriverEntryPointSuccess || *function == NULL) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "the CUDA driver has no %s (ABI %u): %s", symbol, version,
                status == cudaDriverEntryPointVersionNotSufficent ? "driver too old"
                                                                  : "symbol not found");
    return FALSE;
  }
  return TRUE;
}

const EmaDriverApi *ema_driver_api(GError **error) {
  EmaDriverApi api = {0};
  if (driver_api_loaded)
    return &driver_api;
  if (!resolve("cuGetErrorString", 6000, (void **) &api.get_error_string, error) ||
      !resolve("cuGetErrorName", 6000, (void **) &api.get_error_name, error) ||
      !resolve("cuDeviceGet", 2000, (void **) &api.device_get, error) ||
      !resolve("cuDeviceGetAttribute", 2000, (void **) &api.device_get_attribute, error) ||
      !resolve("cuMemGetAllocationGranularity", 10020,
               (void **) &api.mem_get_allocation_granularity, error) ||
      !resolve("cuMemCreate", 10020, (void **) &api.mem_create, error) ||
      !resolve("cuMemRelease", 10020, (void **) &api.mem_release, error) ||
      !resolve("cuMemAddressReserve", 10020, (void **) &api.mem_address_reserve, error) ||
      !resolve("cuMemAddressFree", 10020, (void **) &api.mem_address_free, error) ||
      !resolve("cuMemMap", 10020, (void **) &api.mem_map, error) ||
      !resolve("cuMemUnmap", 10020, (void **) &api.mem_unmap, error) ||
      !resolve("cuMemSetAccess", 10020, (void **) &api.mem_set_access, error))
    return NULL;
  driver_api = api;
  driver_api_loaded = TRUE;
  return &driver_api;
}

gboolean ema_cuda_device_count(int *count, GError **error) {
  cudaError_t result = cudaGetDeviceCount(count);
  if (result == cudaSuccess && *count > 0)
    return TRUE;
  (void) cudaGetLastError();
  if (result == cudaSuccess)
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                "no CUDA device: cudaGetDeviceCount found none");
  else
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                "no CUDA device: cudaGetDeviceCount: %s (%s)%s", cudaGetErrorString(result),
                cudaGetErrorName(result),
                result == cudaErrorInsufficientDriver ? "; is the NVIDIA driver installed?" : "");
  *count = 0;
  return FALSE;
}

static char *version_text(int version) {
  if (version <= 0)
    return g_strdup("none");
  return g_strdup_printf("%d.%d", version / 1000, (version % 1000) / 10);
}

char *ema_cuda_versions(void) {
  int driver = 0, runtime = 0;
  g_autofree char *driver_text = NULL;
  g_autofree char *runtime_text = NULL;
  if (cudaDriverGetVersion(&driver) != cudaSuccess)
    driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
    runtime = 0;
  (void) cudaGetLastError();
  driver_text = version_text(driver);
  runtime_text = version_text(runtime);
  return g_strdup_printf("driver API %s, runtime %s", driver_text, runtime_text);
}

char *ema_nvidia_driver_version(void) {
  g_autofree char *text = NULL;
  g_auto(GStrv) words = NULL;
  if (!g_file_get_contents("/proc/driver/nvidia/version", &text, NULL, NULL))
    return g_strdup("unknown (no /proc/driver/nvidia/version)");
  /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..." */
  words = g_strsplit_set(text, " \t\n", -1);
  for (guint i = 0; words[i]; i++) {
    const char *w = words[i];
    if (g_ascii_isdigit(w[0]) && strchr(w, '.') && strspn(w, "0123456789.") == strlen(w))
      return g_strdup(w);
  }
  return g_strdup("unknown (unrecognised /proc/driver/nvidia/version)");
}
