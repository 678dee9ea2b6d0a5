/* cudacheck.h: every CUDA call of ema-validate goes through one of two
 * macros that turn a failure into a GError (EMA_VALIDATE_ERROR_CUDA) with
 * the call's text, the device it was made for, the driver's name and
 * message for the error, and the source line:
 *
 *   if (!EMA_CUDA(device, error, cudaMalloc(&buffer, bytes)))
 *     goto out;
 *   -> "GPU 1: cudaMalloc(&buffer, bytes): out of memory
 *       (cudaErrorMemoryAllocation) [calibrate.c:210]"
 *
 * EMA_CUDA checks runtime-API calls (cudaError_t), EMA_CU driver-API calls
 * (CUresult, through the entry points in EmaDriverApi). A call that fails
 * while ERROR is already set keeps the first error (cleanup after a
 * failure must not hide its cause). DEVICE is -1 for calls that concern no
 * one GPU. The driver API is reached through the runtime's
 * cudaGetDriverEntryPointByVersion, so the program does not link libcuda
 * and starts (and prints --help) on machines without a driver. */
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <glib.h>

#include "errors.h"

G_BEGIN_DECLS

gboolean ema_cuda_result(cudaError_t result, const char *call, int device, const char *file,
                         int line, GError **error);
gboolean ema_cu_result(CUresult result, const char *call, int device, const char *file, int line,
                       GError **error);

#define EMA_CUDA(device, error, call)                                                              \
  ema_cuda_result((call), #call, (device), __FILE__, __LINE__, (error))
#define EMA_CU(device, error, call)                                                                \
  ema_cu_result((call), #call, (device), __FILE__, __LINE__, (error))

/* The driver-API functions ema-validate uses (CUDA VMM), resolved once. */
typedef struct {
  PFN_cuGetErrorString_v6000 get_error_string;
  PFN_cuGetErrorName_v6000 get_error_name;
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute;
  PFN_cuMemGetAllocationGranularity_v10020 mem_get_allocation_granularity;
  PFN_cuMemCreate_v10020 mem_create;
  PFN_cuMemRelease_v10020 mem_release;
  PFN_cuMemAddressReserve_v10020 mem_address_reserve;
  PFN_cuMemAddressFree_v10020 mem_address_free;
  PFN_cuMemMap_v10020 mem_map;
  PFN_cuMemUnmap_v10020 mem_unmap;
  PFN_cuMemSetAccess_v10020 mem_set_access;
} EmaDriverApi;

/* The resolved table (after the runtime is initialised), or NULL with an
 * error naming the symbol that is missing. */
const EmaDriverApi *ema_driver_api(GError **error);

/* The number of CUDA devices. No driver, no device, or a device hidden by
 * CUDA_VISIBLE_DEVICES is EMA_VALIDATE_ERROR_NO_DEVICE: "no CUDA device:
 * ..." with the runtime's own message. */
gboolean ema_cuda_device_count(int *count, GError **error);

/* "driver API 13.0, runtime 13.0". Newly allocated. */
char *ema_cuda_versions(void);
/* The NVIDIA driver version from /proc/driver/nvidia/version
 * ("580.159.04"), or "unknown (...)". Newly allocated. */
char *ema_nvidia_driver_version(void);

G_END_DECLS
