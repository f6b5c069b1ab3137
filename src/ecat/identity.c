/* The AUTD3 identity check (identity.h). */
#include "ecat/identity.h"

#include <string.h>

#include "autd3/link_driver.h"

bool autd3__ecat_is_autd(uint32_t vendor, uint32_t product, const char *name) {
  return vendor == AUTD3_ECAT_VENDOR && product == AUTD3_ECAT_PRODUCT && name != NULL && strcmp(name, AUTD3_ECAT_NAME) == 0;
}

autd3_err_t autd3__ecat_check_identity(const char *who, const char *ifname, uint16_t position, uint32_t vendor,
                                       uint32_t product, const char *name) {
  if (autd3__ecat_is_autd(vendor, product, name))
    return AUTD3_OK;
  return autd3_set_error(AUTD3_E_NOT_AUTD,
                         "%s: device at position %u on interface %s (vendor 0x%08x, product 0x%08x, name \"%s\") is not "
                         "an AUTD3 device (expected vendor 0x%08x, product 0x%08x, name \"%s\")",
                         who, (unsigned)position, ifname ? ifname : "?", (unsigned)vendor, (unsigned)product,
                         name ? name : "", AUTD3_ECAT_VENDOR, AUTD3_ECAT_PRODUCT, AUTD3_ECAT_NAME);
}
