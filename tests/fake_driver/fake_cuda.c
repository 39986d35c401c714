/*
 * tests/fake_driver/fake_cuda.c: a stand-in libcuda.so.1 for CPU-only CI. It exports the driver
 * entry points csrc/device/cuda_driver.cc resolves, with the behaviour of the real driver that
 * vllm_mem depends on: nothing works before cuInit, contexts are per thread, a memory query needs
 * a current context, a forked child of an initialised parent cannot initialise, and
 * CUDA_VISIBLE_DEVICES renumbers devices. Its state comes from the file named by
 * VLLM_MEM_FAKE_DRIVER_STATE, re-read on every call; every call is logged to
 * VLLM_MEM_FAKE_DRIVER_LOG (format: README.md here).
 */
#include <ctype.h>
#include <stddef.h>

#include "fake_state.h"

typedef int CUresult;
typedef int CUdevice;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidContext = 201,
};

#define kMagic 0x46414b45 /* "FAKE" */

typedef struct {
  int magic;
  int ordinal; /* the CUDA (visible) ordinal */
} FakeContext;

static int init_pid = 0;
static int visible_count = 0;
static int visible_physical[FAKE_MAX_DEVICES];
static FakeContext contexts[FAKE_MAX_DEVICES];
static int retained[FAKE_MAX_DEVICES];
static long long mem_info_calls[FAKE_MAX_DEVICES];
static __thread FakeContext* stack[64];
static __thread int depth = 0;

/* The devices the driver shows: CUDA_VISIBLE_DEVICES read as the driver reads it (indices or
   GPU-UUID prefixes, in the order given, stopping at the first entry that names no device). */
static void compute_visible(void) {
  const int physical = fake_physical_count();
  visible_count = 0;
  const char* env = getenv("CUDA_VISIBLE_DEVICES");
  if (env == NULL) {
    for (int i = 0; i < physical; ++i) visible_physical[visible_count++] = i;
    return;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", env);
  char* save = NULL;
  for (char* tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    while (isspace((unsigned char)*tok)) ++tok;
    int found = -1;
    if (strncmp(tok, "GPU-", 4) == 0) {
      for (int i = 0; i < physical && found < 0; ++i) {
        char key[64], uuid[96];
        snprintf(key, sizeof key, "device.%d.uuid", i);
        const char* v = fake_get(key);
        if (v != NULL) snprintf(uuid, sizeof uuid, "%s", v);
        else snprintf(uuid, sizeof uuid, "GPU-fake-%d", i);
        if (strncmp(uuid, tok, strlen(tok)) == 0) found = i;
      }
    } else {
      char* end = NULL;
      long v = strtol(tok, &end, 10);
      if (end != tok && v >= 0 && v < physical) found = (int)v;
    }
    if (found < 0) break;
    for (int i = 0; i < visible_count; ++i) {
      if (visible_physical[i] == found) found = -1;  /* a repeated entry ends the list too */
    }
    if (found < 0 || visible_count >= FAKE_MAX_DEVICES) break;
    visible_physical[visible_count++] = found;
  }
}

/* The common prologue: the injected error, then "not initialised" (also in a forked child). */
static CUresult enter(const char* name) {
  int injected = fake_error("error", name);
  if (injected != 0) {
    fake_log(name, injected, "injected");
    return injected;
  }
  if (init_pid == 0) {
    fake_log(name, kNotInitialized, "before-cuInit");
    return kNotInitialized;
  }
  if (init_pid != (int)getpid()) {
    fake_log(name, kNotInitialized, "forked-child");
    return kNotInitialized;
  }
  return kSuccess;
}

static CUresult done(const char* name, CUresult rc, const char* detail) {
  fake_log(name, rc, detail);
  return rc;
}

CUresult cuInit(unsigned int flags) {
  (void)flags;
  int injected = fake_error("error", "cuInit");
  if (injected != 0) return done("cuInit", injected, "injected");
  if (init_pid != 0 && init_pid != (int)getpid()) return done("cuInit", kNotInitialized, "forked-child");
  compute_visible();
  if (visible_count == 0) return done("cuInit", kNoDevice, NULL);
  init_pid = (int)getpid();
  return done("cuInit", kSuccess, NULL);
}

CUresult cuDriverGetVersion(int* version) {
  int injected = fake_error("error", "cuDriverGetVersion");
  if (injected != 0) return done("cuDriverGetVersion", injected, "injected");
  if (version == NULL) return done("cuDriverGetVersion", kInvalidValue, NULL);
  *version = (int)fake_get_ll("driver_version", 12080);
  return done("cuDriverGetVersion", kSuccess, NULL);
}

CUresult cuDeviceGetCount(int* count) {
  CUresult rc = enter("cuDeviceGetCount");
  if (rc != kSuccess) return rc;
  *count = visible_count;
  return done("cuDeviceGetCount", kSuccess, NULL);
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  CUresult rc = enter("cuDeviceGet");
  if (rc != kSuccess) return rc;
  if (ordinal < 0 || ordinal >= visible_count) return done("cuDeviceGet", kInvalidDevice, NULL);
  *device = ordinal;
  return done("cuDeviceGet", kSuccess, NULL);
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  CUresult rc = enter("cuDeviceGetAttribute");
  if (rc != kSuccess) return rc;
  if (device < 0 || device >= visible_count) return done("cuDeviceGetAttribute", kInvalidDevice, NULL);
  const int physical = visible_physical[device];
  if (attribute == 18) *value = (int)fake_dev_ll(physical, "integrated", 0);
  else if (attribute == 97) *value = (int)fake_dev_ll(physical, "max_shared_memory_optin", 232448);
  else *value = 0;
  return done("cuDeviceGetAttribute", kSuccess, NULL);
}

CUresult cuDeviceGetPCIBusId(char* out, int len, CUdevice device) {
  CUresult rc = enter("cuDeviceGetPCIBusId");
  if (rc != kSuccess) return rc;
  if (device < 0 || device >= visible_count) return done("cuDeviceGetPCIBusId", kInvalidDevice, NULL);
  if (out == NULL || len <= 0) return done("cuDeviceGetPCIBusId", kInvalidValue, NULL);
  /* The driver's form is the short domain "0000:3B:00.0"; NVML's the long "00000000:3B:00.0". */
  char id[64];
  fake_pci_bus_id(visible_physical[device], id, sizeof id);
  const char* shorter = strlen(id) > 12 && strncmp(id, "0000", 4) == 0 ? id + 4 : id;
  snprintf(out, (size_t)len, "%s", shorter);
  return done("cuDeviceGetPCIBusId", kSuccess, NULL);
}

CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice device) {
  CUresult rc = enter("cuDevicePrimaryCtxRetain");
  if (rc != kSuccess) return rc;
  if (device < 0 || device >= visible_count) return done("cuDevicePrimaryCtxRetain", kInvalidDevice, NULL);
  const int created = retained[device] == 0;
  contexts[device].magic = kMagic;
  contexts[device].ordinal = device;
  ++retained[device];
  *ctx = &contexts[device];
  return done("cuDevicePrimaryCtxRetain", kSuccess, created ? "created" : NULL);
}

static int valid_context(const void* ctx) {
  for (int i = 0; i < FAKE_MAX_DEVICES; ++i) {
    if (ctx == &contexts[i]) return contexts[i].magic == kMagic && retained[i] > 0;
  }
  return 0;
}

CUresult cuCtxPushCurrent_v2(void* ctx) {
  CUresult rc = enter("cuCtxPushCurrent_v2");
  if (rc != kSuccess) return rc;
  if (!valid_context(ctx)) return done("cuCtxPushCurrent_v2", kInvalidContext, "garbage");
  if (depth >= 64) return done("cuCtxPushCurrent_v2", kInvalidValue, "overflow");
  stack[depth++] = (FakeContext*)ctx;
  return done("cuCtxPushCurrent_v2", kSuccess, NULL);
}

CUresult cuCtxPopCurrent_v2(void** ctx) {
  CUresult rc = enter("cuCtxPopCurrent_v2");
  if (rc != kSuccess) return rc;
  if (depth == 0) return done("cuCtxPopCurrent_v2", kInvalidContext, "empty");
  FakeContext* top = stack[--depth];
  if (ctx != NULL) *ctx = top;
  return done("cuCtxPopCurrent_v2", kSuccess, NULL);
}

CUresult cuCtxGetCurrent(void** ctx) {
  CUresult rc = enter("cuCtxGetCurrent");
  if (rc != kSuccess) return rc;
  *ctx = depth > 0 ? stack[depth - 1] : NULL;
  return done("cuCtxGetCurrent", kSuccess, NULL);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  CUresult rc = enter("cuCtxGetDevice");
  if (rc != kSuccess) return rc;
  if (depth == 0) return done("cuCtxGetDevice", kInvalidContext, NULL);
  *device = stack[depth - 1]->ordinal;
  return done("cuCtxGetDevice", kSuccess, NULL);
}

CUresult cuCtxSynchronize(void) {
  CUresult rc = enter("cuCtxSynchronize");
  if (rc != kSuccess) return rc;
  if (depth == 0) return done("cuCtxSynchronize", kInvalidContext, NULL);
  return done("cuCtxSynchronize", kSuccess, NULL);
}

/* Free memory of the current context's device at this call: the fixed figure, a sequence
   (device.K.free_sequence = a,b,c; the last value repeats), and a drop that appears after a
   number of calls (device.K.free_drop_after_calls / free_drop_bytes: an allocation made by
   someone else between two reads). */
static long long free_at_call(int physical, long long total, long long call) {
  char key[64];
  long long free_bytes = fake_dev_ll(physical, "free_bytes", total);
  snprintf(key, sizeof key, "device.%d.free_sequence", physical);
  const char* seq = fake_get(key);
  if (seq != NULL && *seq != '\0') {
    long long index = 0;
    const char* p = seq;
    for (;;) {
      char* end = NULL;
      long long v = strtoll(p, &end, 0);
      if (end == p) break;
      free_bytes = v;
      if (index++ >= call) break;
      p = strchr(end, ',');
      if (p == NULL) break;
      ++p;
    }
  }
  const long long after = fake_dev_ll(physical, "free_drop_after_calls", -1);
  if (after >= 0 && call >= after) free_bytes -= fake_dev_ll(physical, "free_drop_bytes", 0);
  return free_bytes < 0 ? 0 : free_bytes;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  CUresult rc = enter("cuMemGetInfo_v2");
  if (rc != kSuccess) return rc;
  if (depth == 0) return done("cuMemGetInfo_v2", kInvalidContext, NULL);
  const int ordinal = stack[depth - 1]->ordinal;
  const int physical = visible_physical[ordinal];
  const long long total = fake_dev_ll(physical, "total_bytes", 80LL << 30);
  const long long call = mem_info_calls[ordinal]++;
  *free_bytes = (size_t)free_at_call(physical, total, call);
  *total_bytes = (size_t)total;
  char detail[48];
  snprintf(detail, sizeof detail, "device=%d call=%lld", ordinal, call);
  return done("cuMemGetInfo_v2", kSuccess, detail);
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == NULL) return kInvalidValue;
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; break;
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case 201: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case 802: *name = "CUDA_ERROR_SYSTEM_NOT_READY"; break;
    case 803: *name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; break;
    default: return kInvalidValue;
  }
  return kSuccess;
}

/* For tests through ctypes: the calling thread's context stack depth (push/pop balance). */
int fake_cuda_context_depth(void) { return depth; }
