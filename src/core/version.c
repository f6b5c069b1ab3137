#include "autd3/version.h"

#define AUTD3_STR2_(x) #x
#define AUTD3_STR_(x) AUTD3_STR2_(x)

unsigned autd3_version(void) { return AUTD3_VERSION_HEX; }

const char *autd3_version_string(void) {
  return AUTD3_STR_(AUTD3_VERSION_MAJOR) "." AUTD3_STR_(AUTD3_VERSION_MINOR) "." AUTD3_STR_(AUTD3_VERSION_PATCH);
}
