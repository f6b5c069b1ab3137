/*
 * Standalone driver for the fuzz targets when libFuzzer is not available
 * (gcc builds, and the ctest smoke): replays every file of the corpus
 * folders given on the command line, then feeds mutated and random inputs
 * for `-seconds=N` (default 5). With clang and -DAUTD3_FUZZ=ON the same
 * targets link against libFuzzer instead.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define MAX_SEEDS 256
#define MAX_LEN 4096
static uint8_t seeds[MAX_SEEDS][MAX_LEN];
static size_t seed_len[MAX_SEEDS];
static int nseeds;

static void load_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && nseeds < MAX_SEEDS) {
    if (e->d_name[0] == '.') continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    FILE *f = fopen(p, "rb");
    if (!f) continue;
    seed_len[nseeds] = fread(seeds[nseeds], 1, MAX_LEN, f);
    fclose(f);
    LLVMFuzzerTestOneInput(seeds[nseeds], seed_len[nseeds]);
    nseeds++;
  }
  closedir(d);
}

int main(int argc, char **argv) {
  double seconds = 5;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "-seconds=", 9) == 0) seconds = atof(argv[i] + 9);
    else if (strncmp(argv[i], "-seed=", 6) == 0) rng = strtoull(argv[i] + 6, NULL, 0) | 1;
    else load_dir(argv[i]);
  }
  static uint8_t buf[MAX_LEN];
  clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
  unsigned long runs = 0;
  while (clock() < end) {
    size_t len;
    if (nseeds > 0 && (next() & 3) != 0) {
      int s = (int)(next() % (uint64_t)nseeds);
      len = seed_len[s];
      memcpy(buf, seeds[s], len);
      int flips = 1 + (int)(next() % 8);
      for (int k = 0; k < flips && len > 0; k++) {
        switch (next() % 4) {
          case 0: buf[next() % len] ^= (uint8_t)(1u << (next() % 8)); break;
          case 1: buf[next() % len] = (uint8_t)next(); break;
          case 2: len = (size_t)(next() % (len + 1)); break; /* truncate */
          default: if (len < MAX_LEN) { buf[len] = (uint8_t)next(); len++; } break;
        }
      }
    } else {
      len = (size_t)(next() % 2048);
      for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)next();
    }
    LLVMFuzzerTestOneInput(buf, len);
    runs++;
  }
  printf("fuzz smoke: %lu inputs, %d seeds, no crash\n", runs, nseeds);
  return 0;
}
