/*
 * tests/fake_driver/fake_state.h: the state file both fakes read (format: README.md here) and
 * the call log they append to. Plain C, no dependencies, so the tests can build the fakes with
 * whatever C compiler the machine has.
 */
#ifndef VLLM_MEM_FAKE_STATE_H_
#define VLLM_MEM_FAKE_STATE_H_

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_MAX_DEVICES 16
#define FAKE_MAX_KEYS 256

typedef struct {
  char key[96];
  char value[160];
} FakeEntry;

static FakeEntry fake_entries[FAKE_MAX_KEYS];
static int fake_num_entries = -1; /* -1: not read yet */

/* Re-read on every call: a test may rewrite the file between two calls of a running process
   (the file is small and the fake is not timed). */
static void fake_read_state(void) {
  fake_num_entries = 0;
  const char* path = getenv("VLLM_MEM_FAKE_DRIVER_STATE");
  if (path == NULL || *path == '\0') return;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[300];
  while (fgets(line, sizeof line, f) != NULL && fake_num_entries < FAKE_MAX_KEYS) {
    char* hash = strchr(line, '#');
    if (hash != NULL) *hash = '\0';
    char* eq = strchr(line, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    char* k = line;
    char* v = eq + 1;
    while (*k == ' ' || *k == '\t') ++k;
    while (*v == ' ' || *v == '\t') ++v;
    char* end = k + strlen(k);
    while (end > k && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
    end = v + strlen(v);
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) *--end = '\0';
    snprintf(fake_entries[fake_num_entries].key, sizeof fake_entries[0].key, "%.95s", k);
    snprintf(fake_entries[fake_num_entries].value, sizeof fake_entries[0].value, "%.159s", v);
    ++fake_num_entries;
  }
  fclose(f);
}

static const char* fake_get(const char* key) {
  fake_read_state();
  for (int i = fake_num_entries - 1; i >= 0; --i) {  /* the last assignment wins */
    if (strcmp(fake_entries[i].key, key) == 0) return fake_entries[i].value;
  }
  return NULL;
}

static long long fake_get_ll(const char* key, long long fallback) {
  const char* v = fake_get(key);
  return v == NULL ? fallback : strtoll(v, NULL, 0);
}

static long long fake_dev_ll(int device, const char* field, long long fallback) {
  char key[96];
  snprintf(key, sizeof key, "device.%d.%s", device, field);
  return fake_get_ll(key, fallback);
}

/* "error.NAME = CODE": the code NAME returns instead of doing anything (0 or absent: none). */
static int fake_error(const char* prefix, const char* name) {
  char key[96];
  snprintf(key, sizeof key, "%s.%s", prefix, name);
  return (int)fake_get_ll(key, 0);
}

/* One line per call, "PID NAME RESULT [DETAIL]", appended with O_APPEND so forked children's
   calls land in the same file in order. */
static void fake_log(const char* name, int result, const char* detail) {
  const char* path = getenv("VLLM_MEM_FAKE_DRIVER_LOG");
  if (path == NULL || *path == '\0') return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  char line[256];
  int n = snprintf(line, sizeof line, "%d %s %d%s%s\n", (int)getpid(), name, result,
                   detail != NULL ? " " : "", detail != NULL ? detail : "");
  if (n > 0) {
    ssize_t written = write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)written;
  }
  close(fd);
}

static int fake_physical_count(void) {
  long long n = fake_get_ll("device_count", 1);
  if (n < 0) n = 0;
  if (n > FAKE_MAX_DEVICES) n = FAKE_MAX_DEVICES;
  return (int)n;
}

static void fake_pci_bus_id(int physical, char* out, size_t size) {
  char key[96];
  snprintf(key, sizeof key, "device.%d.pci_bus_id", physical);
  const char* v = fake_get(key);
  if (v != NULL) snprintf(out, size, "%s", v);
  else snprintf(out, size, "00000000:%02X:00.0", 0x10 + physical);
}

#endif /* VLLM_MEM_FAKE_STATE_H_ */
