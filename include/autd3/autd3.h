/**
 * @file autd3.h
 * @brief Umbrella header of libautd3, the link layer of AUTD3 in C.
 *
 * Calling context: each function's documentation ends with a "Context:" line
 * saying which thread may call it and whether it blocks, allocates or takes a
 * lock. "RT-safe" means it never blocks, never allocates and takes no lock, so
 * a real-time loop may call it. Every header compiles as C11 and as C++17
 * (tests/api). docs/api.md describes how the API grows without breaking the ABI.
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
#include "autd3/command.h"
#include "autd3/remote_server.h"

#endif
