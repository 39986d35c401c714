/*
 * tests/fake_driver/fake_nvml.c: a stand-in libnvidia-ml.so.1 for CPU-only CI, reading the same
 * state file as fake_cuda.c (README.md here). NVML ignores CUDA_VISIBLE_DEVICES and numbers the
 * devices physically, as the real library does; it never touches a CUDA context.
 */
#include <ctype.h>

#include "fake_state.h"

typedef int nvmlReturn_t;

enum {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotFound = 6,
  kInsufficientSize = 7,
};

typedef struct {
  int physical;
} FakeNvmlDevice;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} ProcessInfoV2;

typedef struct {
  unsigned long long total, free, used;
} MemoryV1;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} MemoryV2;

static FakeNvmlDevice devices[FAKE_MAX_DEVICES];
static int initialised = 0;

static nvmlReturn_t enter(const char* name, int needs_init) {
  int injected = fake_error("nvml.error", name);
  if (injected != 0) {
    fake_log(name, injected, "injected");
    return injected;
  }
  if (needs_init && !initialised) {
    fake_log(name, kUninitialized, NULL);
    return kUninitialized;
  }
  return kSuccess;
}

static nvmlReturn_t done(const char* name, nvmlReturn_t rc) {
  fake_log(name, rc, NULL);
  return rc;
}

static FakeNvmlDevice* device_of(void* handle) {
  for (int i = 0; i < FAKE_MAX_DEVICES; ++i) {
    if (handle == &devices[i] && i < fake_physical_count()) return &devices[i];
  }
  return NULL;
}

nvmlReturn_t nvmlInit_v2(void) {
  nvmlReturn_t rc = enter("nvmlInit_v2", 0);
  if (rc != kSuccess) return rc;
  initialised = 1;
  for (int i = 0; i < FAKE_MAX_DEVICES; ++i) devices[i].physical = i;
  return done("nvmlInit_v2", kSuccess);
}

nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return done("nvmlShutdown", kSuccess);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  nvmlReturn_t rc = enter("nvmlSystemGetCudaDriverVersion_v2", 1);
  if (rc != kSuccess) return rc;
  *version = (int)fake_get_ll("driver_version", 12080);
  return done("nvmlSystemGetCudaDriverVersion_v2", kSuccess);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  nvmlReturn_t rc = enter("nvmlDeviceGetCount_v2", 1);
  if (rc != kSuccess) return rc;
  *count = (unsigned int)fake_physical_count();
  return done("nvmlDeviceGetCount_v2", kSuccess);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** handle) {
  nvmlReturn_t rc = enter("nvmlDeviceGetHandleByIndex_v2", 1);
  if (rc != kSuccess) return rc;
  if ((int)index >= fake_physical_count()) return done("nvmlDeviceGetHandleByIndex_v2", kInvalidArgument);
  *handle = &devices[index];
  return done("nvmlDeviceGetHandleByIndex_v2", kSuccess);
}

/* "0000:3b:00.0" and "00000000:3B:00.0" name the same device: upper case, 4-digit domain. */
static void normalise_bus_id(const char* in, char* out, size_t size) {
  const char* colon = strchr(in, ':');
  if (colon != NULL && colon - in > 4) in = colon - 4;
  size_t i = 0;
  for (; in[i] != '\0' && i + 1 < size; ++i) out[i] = (char)toupper((unsigned char)in[i]);
  out[i] = '\0';
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** handle) {
  nvmlReturn_t rc = enter("nvmlDeviceGetHandleByPciBusId_v2", 1);
  if (rc != kSuccess) return rc;
  char wanted[64], have[64], id[64];
  normalise_bus_id(bus_id, wanted, sizeof wanted);
  for (int i = 0; i < fake_physical_count(); ++i) {
    fake_pci_bus_id(i, id, sizeof id);
    normalise_bus_id(id, have, sizeof have);
    if (strcmp(wanted, have) == 0) {
      *handle = &devices[i];
      return done("nvmlDeviceGetHandleByPciBusId_v2", kSuccess);
    }
  }
  return done("nvmlDeviceGetHandleByPciBusId_v2", kNotFound);
}

nvmlReturn_t nvmlDeviceGetUUID(void* handle, char* uuid, unsigned int length) {
  nvmlReturn_t rc = enter("nvmlDeviceGetUUID", 1);
  if (rc != kSuccess) return rc;
  FakeNvmlDevice* d = device_of(handle);
  if (d == NULL) return done("nvmlDeviceGetUUID", kInvalidArgument);
  char key[64];
  snprintf(key, sizeof key, "device.%d.uuid", d->physical);
  const char* v = fake_get(key);
  if (v != NULL) snprintf(uuid, length, "%s", v);
  else snprintf(uuid, length, "GPU-fake-%d", d->physical);
  return done("nvmlDeviceGetUUID", kSuccess);
}

/* NVML's total includes the memory the driver reserves for itself (device.K.reserved_bytes);
   cuMemGetInfo's total does not. */
static void memory_of(int physical, unsigned long long* total, unsigned long long* reserved,
                      unsigned long long* free_bytes) {
  const long long cuda_total = fake_dev_ll(physical, "total_bytes", 80LL << 30);
  *reserved = (unsigned long long)fake_dev_ll(physical, "reserved_bytes", 0);
  *total = (unsigned long long)cuda_total + *reserved;
  *free_bytes = (unsigned long long)fake_dev_ll(physical, "nvml_free_bytes",
                                                fake_dev_ll(physical, "free_bytes", cuda_total));
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void* handle, MemoryV1* memory) {
  nvmlReturn_t rc = enter("nvmlDeviceGetMemoryInfo", 1);
  if (rc != kSuccess) return rc;
  FakeNvmlDevice* d = device_of(handle);
  if (d == NULL || memory == NULL) return done("nvmlDeviceGetMemoryInfo", kInvalidArgument);
  unsigned long long total, reserved, free_bytes;
  memory_of(d->physical, &total, &reserved, &free_bytes);
  memory->total = total;
  memory->free = free_bytes;
  memory->used = total - free_bytes;  /* v1: the reserved part counts as used */
  return done("nvmlDeviceGetMemoryInfo", kSuccess);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void* handle, MemoryV2* memory) {
  nvmlReturn_t rc = enter("nvmlDeviceGetMemoryInfo_v2", 1);
  if (rc != kSuccess) return rc;
  FakeNvmlDevice* d = device_of(handle);
  if (d == NULL || memory == NULL || memory->version != ((unsigned)sizeof(MemoryV2) | (2u << 24))) {
    return done("nvmlDeviceGetMemoryInfo_v2", kInvalidArgument);
  }
  unsigned long long total, reserved, free_bytes;
  memory_of(d->physical, &total, &reserved, &free_bytes);
  memory->total = total;
  memory->reserved = reserved;
  memory->free = free_bytes;
  memory->used = total - reserved - free_bytes;
  return done("nvmlDeviceGetMemoryInfo_v2", kSuccess);
}

/* device.K.processes = "PID:BYTES,PID:BYTES" (BYTES -1: NVML_VALUE_NOT_AVAILABLE). */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count,
                                                     ProcessInfoV2* infos) {
  nvmlReturn_t rc = enter("nvmlDeviceGetComputeRunningProcesses_v3", 1);
  if (rc != kSuccess) return rc;
  FakeNvmlDevice* d = device_of(handle);
  if (d == NULL || count == NULL) return done("nvmlDeviceGetComputeRunningProcesses_v3", kInvalidArgument);
  char key[64];
  snprintf(key, sizeof key, "device.%d.processes", d->physical);
  const char* list = fake_get(key);
  ProcessInfoV2 found[64];
  unsigned int n = 0;
  for (const char* p = list; p != NULL && *p != '\0' && n < 64;) {
    char* end = NULL;
    long long pid = strtoll(p, &end, 10);
    if (end == p || *end != ':') break;
    const char* q = end + 1;
    long long bytes = strtoll(q, &end, 10);
    if (end == q) break;
    found[n].pid = (unsigned int)pid;
    found[n].usedGpuMemory = bytes < 0 ? ~0ULL : (unsigned long long)bytes;
    found[n].gpuInstanceId = found[n].computeInstanceId = 0xFFFFFFFFu;
    ++n;
    p = strchr(end, ',');
    if (p != NULL) ++p;
  }
  const unsigned int room = *count;
  *count = n;
  if (infos == NULL || room < n) {
    return done("nvmlDeviceGetComputeRunningProcesses_v3", n == 0 ? kSuccess : kInsufficientSize);
  }
  for (unsigned int i = 0; i < n; ++i) infos[i] = found[i];
  return done("nvmlDeviceGetComputeRunningProcesses_v3", kSuccess);
}
