/**
 * @file autd3.h
 * @brief Umbrella header of libautd3, the link layer of AUTD3 in C.
 * @since 0.1.0
 */
#ifndef AUTD3_AUTD3_H
#define AUTD3_AUTD3_H

#include "autd3/version.h"
#include "autd3/error.h"
#include "autd3/proto.h"
#include "autd3/geometry.h"
#include "autd3/emulator.h"
#include "autd3/link.h"
#include "autd3/client.h"
#include "autd3/remote_server.h"

#endif
