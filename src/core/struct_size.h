/*
 * Size-tagged structs (docs/api.md "Structs that can grow"): the two rules
 * every public option and output struct follows, in one place.
 *
 * Input (options): the caller's `size` must be one the library knows for that
 * struct (each size a released header had); the library starts from its own
 * defaults and copies only the caller's prefix over them, so a field the
 * caller's header did not have keeps its default.
 *
 * Output (stats, status, counters): the library writes exactly `size` bytes:
 * its struct's prefix, and zeros for any tail a newer caller knows and this
 * library does not. Never a byte past `size`.
 */
#ifndef AUTD3_CORE_STRUCT_SIZE_H
#define AUTD3_CORE_STRUCT_SIZE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes of T up to and including `field` (the size of a header whose last field was `field`). */
#define AUTD3__SIZE_THROUGH(T, field) (offsetof(T, field) + sizeof(((T *)0)->field))

static inline int autd3__size_known(size_t size, const size_t *known, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (known[i] == size) return 1;
  return 0;
}

/* Output rule: fill the caller's `dst_size` bytes from the library's `src`. */
static inline void autd3__out_copy(void *dst, size_t dst_size, const void *src, size_t src_size) {
  size_t n = dst_size < src_size ? dst_size : src_size;
  memcpy(dst, src, n);
  if (dst_size > n) memset((uint8_t *)dst + n, 0, dst_size - n);
}

#endif
