/**
 * @file version.h
 * @brief Library version and the export macro.
 * @since 0.1.0
 */
#ifndef AUTD3_VERSION_H
#define AUTD3_VERSION_H

#define AUTD3_VERSION_MAJOR 0
#define AUTD3_VERSION_MINOR 1
#define AUTD3_VERSION_PATCH 0
/** 0xMMmmpp, comparable with `>=`. */
#define AUTD3_VERSION_HEX ((AUTD3_VERSION_MAJOR << 16) | (AUTD3_VERSION_MINOR << 8) | AUTD3_VERSION_PATCH)

#if defined(_WIN32)
#  if defined(AUTD3_BUILDING_SHARED)
#    define AUTD3_EXTERN __declspec(dllexport)
#  elif defined(AUTD3_USING_SHARED)
#    define AUTD3_EXTERN __declspec(dllimport)
#  else
#    define AUTD3_EXTERN
#  endif
#else
#  define AUTD3_EXTERN __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif
/**
 * Version of the library actually linked, as AUTD3_VERSION_HEX. Thread-safe.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN unsigned autd3_version(void);
/**
 * Version string "MAJOR.MINOR.PATCH" of the linked library. Thread-safe.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_version_string(void);
#ifdef __cplusplus
}
#endif
#endif
