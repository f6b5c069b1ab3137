/*
 * The AUTD3 identity check, once for every EtherCAT link (echocat, SOEM,
 * EtherCrab) and the identity the device emulator reports: an AUTD3 is a
 * slave with SII vendor id 0x000008A9, product code 0x00000001 and name
 * (SII string 1, ESI Type) "AUTD" (docs/echocat.md "Bring-up").
 */
#ifndef AUTD3_ECAT_IDENTITY_H
#define AUTD3_ECAT_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"

#define AUTD3_ECAT_VENDOR 0x000008A9u
#define AUTD3_ECAT_PRODUCT 0x00000001u
#define AUTD3_ECAT_NAME "AUTD"

/* Vendor, product and name all match. name NULL = no match. */
bool autd3__ecat_is_autd(uint32_t vendor, uint32_t product, const char *name);
/* AUTD3_OK if they match, else AUTD3_E_NOT_AUTD with the one message every
 * link gives: "<who>: device at position <pos> on interface <ifname>
 * (vendor ..., product ..., name "...") is not an AUTD3 device (expected
 * vendor 0x000008a9, product 0x00000001, name "AUTD")". */
autd3_err_t autd3__ecat_check_identity(const char *who, const char *ifname, uint16_t position, uint32_t vendor,
                                       uint32_t product, const char *name);

#endif
